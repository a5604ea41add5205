-- The Events API (lakeledger/projections/events_queries.py) says of each event how many events its request
-- appended: the history rows of one request id, found by this index.

CREATE INDEX IF NOT EXISTS ll_history_by_request ON ll_history (request_id);
