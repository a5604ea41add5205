-- A running maintenance run a task control asked to stop (Lakekeeper's `stop`) is STOPPING until its worker ends
-- the attempt: still open, so the open-task indexes take it in.
DROP INDEX IF EXISTS ll_tasks_open;
CREATE INDEX ll_tasks_open ON ll_tasks (queue, scheduled_for) WHERE status IN ('SCHEDULED', 'RUNNING', 'STOPPING');
DROP INDEX IF EXISTS ll_tasks_open_by_entity;
CREATE INDEX ll_tasks_open_by_entity ON ll_tasks (entity_id, queue) WHERE status IN ('SCHEDULED', 'RUNNING', 'STOPPING');
