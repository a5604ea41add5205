-- A warehouse's format-version policy (Warehouse.FormatVersionPolicySet, lakeledger/domain/format_versions.py): the
-- table format versions creates and upgrades may use, and a create's default (null: v2 where allowed, else the
-- highest). jsonb, as every number an event carries may be of any size (lakeledger/projections/storable.py).

ALTER TABLE ll_warehouses ADD COLUMN IF NOT EXISTS allowed_format_versions jsonb NOT NULL DEFAULT '[1, 2, 3]';
ALTER TABLE ll_warehouses ADD COLUMN IF NOT EXISTS default_format_version jsonb;
