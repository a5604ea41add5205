-- Tasks (lakeledger/domain/tasks.py): the soft-deletion expiries and purges each drop scheduled, with their status, as
-- the tasks API answers them (lakeledger/projections/tasks.py). A read model: rebuilt from the log, task ids included.

CREATE TABLE IF NOT EXISTS ll_tasks (
    task_id        uuid PRIMARY KEY,
    warehouse_id   uuid NOT NULL,
    queue          text NOT NULL,                 -- tabular_expiration, tabular_purge
    entity_type    text NOT NULL,                 -- table, view, generic-table
    entity_id      uuid NOT NULL,
    entity_name    text[] NOT NULL,               -- the namespace's path and the object's name at the drop
    status         text NOT NULL,                 -- SCHEDULED, SUCCESS, CANCELLED (Lakekeeper's TaskStatus)
    scheduled_for  timestamptz NOT NULL,
    created_at     timestamptz NOT NULL,
    updated_at     timestamptz,
    message        text,                          -- how it ended: files removed, cancelled by whom
    data           jsonb NOT NULL                 -- what the task works on (location, whether a purge follows)
);
CREATE INDEX IF NOT EXISTS ll_tasks_by_warehouse ON ll_tasks (warehouse_id, created_at, task_id);
CREATE INDEX IF NOT EXISTS ll_tasks_by_entity ON ll_tasks (entity_id, queue) WHERE status = 'SCHEDULED';

INSERT INTO ll_projection_positions (name, position) VALUES ('tasks', 0) ON CONFLICT (name) DO NOTHING;
