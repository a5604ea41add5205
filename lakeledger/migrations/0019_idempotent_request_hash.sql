-- The hash of the request a kept answer answers (method, path, query and body: lakeledger/domain/idempotency.py), so that the
-- same Idempotency-Key on a different request is refused (422) rather than answered with another request's answer.
-- NULL on answers kept before: those are bound to their method and path alone.

ALTER TABLE ll_idempotent_responses ADD COLUMN IF NOT EXISTS request_hash text;
