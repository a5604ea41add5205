-- Soft deletion, undrop, expiry and protection. Read models only: all of it is rebuilt from the log.

ALTER TABLE ll_warehouses ADD COLUMN IF NOT EXISTS protected boolean NOT NULL DEFAULT false;
ALTER TABLE ll_namespaces ADD COLUMN IF NOT EXISTS protected boolean NOT NULL DEFAULT false;

-- A tabular row is live (dropped_at NULL), soft-deleted (dropped_at set, deleted_at NULL: restorable until
-- expires_at), or deleted for good (deleted_at set); a purge it asked for is done once purged_at is set.
ALTER TABLE ll_tabulars ADD COLUMN IF NOT EXISTS expires_at timestamptz;
ALTER TABLE ll_tabulars ADD COLUMN IF NOT EXISTS deleted_at timestamptz;
ALTER TABLE ll_tabulars ADD COLUMN IF NOT EXISTS purged_at timestamptz;
ALTER TABLE ll_tabulars ADD COLUMN IF NOT EXISTS dropped_with uuid;
ALTER TABLE ll_tabulars ADD COLUMN IF NOT EXISTS protected boolean NOT NULL DEFAULT false;
-- drops recorded before soft deletion existed were final
UPDATE ll_tabulars SET deleted_at = dropped_at WHERE dropped_at IS NOT NULL AND deleted_at IS NULL;
CREATE INDEX IF NOT EXISTS ll_tabulars_soft_deleted ON ll_tabulars (warehouse_id, dropped_at, id)
    WHERE dropped_at IS NOT NULL AND deleted_at IS NULL;

-- Namespaces taken along by a recursive soft drop wait here, with their properties, until undropped or expired.
CREATE TABLE IF NOT EXISTS ll_dropped_namespaces (
    id            uuid PRIMARY KEY,
    warehouse_id  uuid NOT NULL,
    parent_id     uuid,
    path          text[] NOT NULL,
    properties    jsonb NOT NULL,
    protected     boolean NOT NULL,
    created_at    timestamptz NOT NULL,
    updated_at    timestamptz,
    dropped_at    timestamptz NOT NULL,
    expires_at    timestamptz NOT NULL,
    dropped_with  uuid
);

-- The expiry schedule: one timer per soft-deleted table, view or namespace (lakeledger/projections/expiry_schedule.py).
CREATE TABLE IF NOT EXISTS ll_expiry_schedule (
    entity_id     uuid PRIMARY KEY,
    entity_type   text NOT NULL,
    due_at        timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS ll_expiry_schedule_by_due ON ll_expiry_schedule (due_at);
