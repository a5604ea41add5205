-- Final responses of requests that carried an Idempotency-Key, replayed to their retries. A cache, not a
-- read model: the keys themselves are in the event log, recorded with the changes they made.

CREATE TABLE IF NOT EXISTS ll_idempotent_responses (
    key         uuid PRIMARY KEY,
    method      text NOT NULL,
    path        text NOT NULL,
    status      integer NOT NULL,
    headers     jsonb NOT NULL,
    body        bytea NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX IF NOT EXISTS ll_idempotent_responses_created_at ON ll_idempotent_responses (created_at);
