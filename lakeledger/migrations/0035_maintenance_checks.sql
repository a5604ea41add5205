-- When the maintenance scheduler (lakeledger/workers/maintainer.py) last looked at a table for one action: worker
-- state, not a read model (nothing in the log says when a table was looked at and found healthy), so an action is
-- checked at most once per its policy's schedule-interval across restarts and workers.

CREATE TABLE IF NOT EXISTS ll_maintenance_checks (
    table_id    uuid NOT NULL,
    queue       text NOT NULL,                  -- data_compaction, metadata_compaction, snapshot_expiry, ...
    checked_at  timestamptz NOT NULL,
    PRIMARY KEY (table_id, queue)
);
