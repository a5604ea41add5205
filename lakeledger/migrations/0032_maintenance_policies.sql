-- Maintenance policies (lakeledger/domain/maintenance_policy.py): the settings each warehouse, namespace and table
-- sets itself, per policy type, as they are now: the maintenance-policies projection's read model
-- (lakeledger/projections/maintenance_policies.py), applied inside each append of a policy event, rebuildable from the
-- log. What an object's policy is (inherited and merged) is a query over these rows (maintenance_policies_queries.py).

CREATE TABLE IF NOT EXISTS ll_maintenance_policies (
    target_id      uuid NOT NULL,
    target_type    text NOT NULL,                 -- warehouse, namespace or table
    policy_type    text NOT NULL,                 -- system.data-compaction, system.snapshot-expiry ...
    warehouse_id   uuid NOT NULL,
    parameters     jsonb NOT NULL,                -- only the settings this object sets
    set_at         timestamptz NOT NULL,
    set_by         text NOT NULL,
    request_id     text NOT NULL,
    PRIMARY KEY (target_id, target_type, policy_type)
);
CREATE INDEX IF NOT EXISTS ll_maintenance_policies_by_warehouse ON ll_maintenance_policies (warehouse_id);

INSERT INTO ll_projection_positions (name, position) VALUES ('maintenance-policies', 0) ON CONFLICT (name) DO NOTHING;
