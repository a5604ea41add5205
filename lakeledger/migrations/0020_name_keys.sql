-- Names matched by a warehouse's rule (docs/names.md): each warehouse's `name_matching`, and beside every name of
-- a namespace, table or view its key (lakeledger/domain/names.py name_key): the name folded when the warehouse's
-- names are case-insensitive, the name itself when exact. Lookups compare keys; responses give the names. The rows
-- here before this migration all belong to warehouses created before the setting, whose names match exactly, so
-- their keys are their names: what a rebuild from the log gives them too.
ALTER TABLE ll_warehouses ADD COLUMN IF NOT EXISTS name_matching text NOT NULL DEFAULT 'exact';

ALTER TABLE ll_namespaces ADD COLUMN IF NOT EXISTS path_key text[];
UPDATE ll_namespaces SET path_key = path WHERE path_key IS NULL;
ALTER TABLE ll_namespaces ALTER COLUMN path_key SET NOT NULL;

ALTER TABLE ll_dropped_namespaces ADD COLUMN IF NOT EXISTS path_key text[];
UPDATE ll_dropped_namespaces SET path_key = path WHERE path_key IS NULL;
ALTER TABLE ll_dropped_namespaces ALTER COLUMN path_key SET NOT NULL;

ALTER TABLE ll_tabulars ADD COLUMN IF NOT EXISTS namespace_key text[];
ALTER TABLE ll_tabulars ADD COLUMN IF NOT EXISTS name_key text;
UPDATE ll_tabulars SET namespace_key = namespace, name_key = name WHERE name_key IS NULL;
ALTER TABLE ll_tabulars ALTER COLUMN namespace_key SET NOT NULL;
ALTER TABLE ll_tabulars ALTER COLUMN name_key SET NOT NULL;

-- Not unique: the name claims in the log decide uniqueness (lakeledger/domain/name_claim.py), and one append may
-- move several rows whose keys pass through each other's on the way (a namespace move updates a tree row by row).
CREATE INDEX IF NOT EXISTS ll_namespaces_by_path_key ON ll_namespaces (warehouse_id, path_key);
CREATE INDEX IF NOT EXISTS ll_tabulars_by_name_key ON ll_tabulars (warehouse_id, namespace_key, name_key)
    WHERE dropped_at IS NULL;
CREATE INDEX IF NOT EXISTS ll_tabulars_by_namespace_key ON ll_tabulars (namespace_id, name_key)
    WHERE dropped_at IS NULL;
