-- Task attempts (lakeledger/projections/tasks.py): every purge attempt the log records (started, then succeeded,
-- failed or abandoned by a worker that died), and on each task its current attempt. A read model like ll_tasks:
-- failures recorded before this version were worker state (ll_purge_retries) and are not in the log: those tasks
-- show no attempts.

ALTER TABLE ll_tasks ADD COLUMN IF NOT EXISTS attempts int NOT NULL DEFAULT 0;   -- attempts started
ALTER TABLE ll_tasks ADD COLUMN IF NOT EXISTS picked_up_at timestamptz;           -- the running attempt's start
ALTER TABLE ll_tasks ADD COLUMN IF NOT EXISTS last_error text;                    -- set while the last attempt failed

CREATE TABLE IF NOT EXISTS ll_task_attempts (
    task_id       uuid NOT NULL,
    attempt       int NOT NULL,
    status        text NOT NULL,                  -- RUNNING, SUCCESS, FAILED, CANCELLED
    worker        text NOT NULL,
    scheduled_for timestamptz NOT NULL,
    started_at    timestamptz NOT NULL,
    ended_at      timestamptz,
    message       text,
    PRIMARY KEY (task_id, attempt)
);

-- what is still to run, per queue: the tasks API's controls and the metrics' one query per scrape
CREATE INDEX IF NOT EXISTS ll_tasks_open ON ll_tasks (queue, scheduled_for) WHERE status IN ('SCHEDULED', 'RUNNING');
CREATE INDEX IF NOT EXISTS ll_tasks_open_by_entity ON ll_tasks (entity_id, queue)
    WHERE status IN ('SCHEDULED', 'RUNNING');

