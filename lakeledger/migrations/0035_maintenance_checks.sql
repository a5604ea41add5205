-- When the maintenance scheduler (lakeledger/workers/maintainer.py) last looked at a table for one action: worker
-- state, not a read model (nothing in the log says when a table was looked at and found healthy), so an action is
-- checked at most once per its policy's schedule-interval across restarts and workers.

CREATE TABLE IF NOT EXISTS ll_maintenance_checks (
    table_id    uuid NOT NULL,
    queue       text NOT NULL,                  -- data_compaction, metadata_compaction, snapshot_expiry, ...
    checked_at  timestamptz NOT NULL,
    PRIMARY KEY (table_id, queue)
);

-- When a table is to be looked at next: the soonest schedule-interval of its enabled actions. A pass reads only the
-- tables due (or whose warehouse's policies changed since their last look), not every table of the warehouse.
CREATE TABLE IF NOT EXISTS ll_maintenance_tables (
    table_id       uuid PRIMARY KEY,
    checked_at     timestamptz NOT NULL,
    next_check_at  timestamptz NOT NULL
);
