-- Storage credentials, outside the event log. ll_secrets is the secret store: not a read model (nothing in the
-- log can rebuild it), so `rebuild` leaves it alone; its rows are encrypted with LAKELEDGER__PG_ENCRYPTION_KEY.
-- The warehouses' read model gains the reference events carry: the secret's id and its keyed fingerprint.

CREATE TABLE IF NOT EXISTS ll_secrets (
    id          uuid PRIMARY KEY,
    ciphertext  bytea NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

ALTER TABLE ll_warehouses ADD COLUMN IF NOT EXISTS storage_secret jsonb;
