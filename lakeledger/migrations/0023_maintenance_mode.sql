-- Read-only maintenance mode (lakeledger/domain/maintenance.py): while read_only, the API answers every write 503 with
-- Retry-After. One row per server, from its first switch; written only by the catalog projection.

CREATE TABLE IF NOT EXISTS ll_maintenance_mode (
    id          uuid PRIMARY KEY,
    read_only   boolean NOT NULL,
    updated_at  timestamptz NOT NULL
);
