-- A warehouse's drop-purge-default: what a table drop without purgeRequested does with the files ("purge", as
-- Lakekeeper does and as every warehouse did before the setting existed, or "keep", the REST spec's default).
-- Read model only: rebuilt from the log like the rest.

ALTER TABLE ll_warehouses ADD COLUMN IF NOT EXISTS drop_purge_default text NOT NULL DEFAULT 'purge';
