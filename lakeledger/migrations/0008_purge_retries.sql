-- Purges that failed (storage unreachable, credential revoked, ...) and are tried again with a growing pause.
-- Worker state, not a read model: the purger writes a row in the transaction that moves its position past the
-- drop, so a failure is never forgotten across a restart; the row goes when the purge is recorded.

CREATE TABLE IF NOT EXISTS ll_purge_retries (
    table_id        uuid PRIMARY KEY,
    warehouse_id    uuid NOT NULL,
    location        text NOT NULL,
    attempts        integer NOT NULL,
    next_attempt_at timestamptz NOT NULL,
    last_error      text NOT NULL
);

CREATE INDEX IF NOT EXISTS ll_purge_retries_due ON ll_purge_retries (next_attempt_at);
