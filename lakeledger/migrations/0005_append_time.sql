-- Every event's append time: when it entered the log, on the database's clock, taken under the events-table
-- lock that orders positions (the recorder takes LOCK TABLE ... IN EXCLUSIVE MODE before it inserts), so it never
-- decreases along the log and "the catalog as of T" is a prefix of it (lakeledger/eventstore/append_time.py resolves
-- instants with the index below). The event's own timestamp stays in the event: it is when the aggregate decided,
-- before the append waited for the lock, so concurrent appends can carry their timestamps out of log order.

ALTER TABLE lakeledger_events ADD COLUMN IF NOT EXISTS appended_at timestamptz;

-- Events recorded before this column: their own timestamps, raised to the running maximum along the log so
-- that old logs are monotonic too (an event then counts as appended when every event before it had been). The
-- timestamp is the state's first key; the jsonb cast is the fallback (it cannot read a state holding \u0000).
UPDATE lakeledger_events AS e SET appended_at = filled.at
FROM (SELECT notification_id,
             max(coalesce(substring(convert_from(state, 'UTF8')
                                    FROM '^\{"timestamp":\{"_type_":"datetime_iso","_data_":"([^"]+)"'),
                          convert_from(state, 'UTF8')::jsonb #>> '{timestamp,_data_}')::timestamptz)
                 OVER (ORDER BY notification_id) AS at
      FROM lakeledger_events) AS filled
WHERE e.notification_id = filled.notification_id AND e.appended_at IS NULL;

ALTER TABLE lakeledger_events ALTER COLUMN appended_at SET NOT NULL;

-- Set by the database on every insert, whatever the writer sends: the clock at the insert, or the latest append
-- time when the clock has stepped back since (monotonic with position; ties keep position order). Rows inserted
-- earlier by the same statement are visible here, so the events of one save are ordered too.
CREATE OR REPLACE FUNCTION lakeledger_append_time() RETURNS trigger LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    NEW.appended_at := greatest(clock_timestamp(),
                                (SELECT appended_at FROM lakeledger_events ORDER BY appended_at DESC LIMIT 1));
    RETURN NEW;
END
$$;

DROP TRIGGER IF EXISTS lakeledger_append_time ON lakeledger_events;
CREATE TRIGGER lakeledger_append_time BEFORE INSERT ON lakeledger_events
    FOR EACH ROW EXECUTE FUNCTION lakeledger_append_time();

-- An instant resolves to the last position appended at or before it: one backward probe of this index.
CREATE INDEX IF NOT EXISTS lakeledger_events_by_append_time ON lakeledger_events (appended_at, notification_id);

-- The history read model says when each event entered the log (lakeledger/projections/history.py): rows written before this
-- migration carried the events' own timestamps, and a rebuild must give the same rows as the live projection.
UPDATE ll_history AS h SET time = e.appended_at
FROM lakeledger_events AS e
WHERE e.notification_id = h.sequence AND h.time IS DISTINCT FROM e.appended_at;
