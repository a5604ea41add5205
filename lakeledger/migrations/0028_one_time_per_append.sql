-- One append time for all the events of one append (one transaction): the first takes the clock as before (under
-- the events-table lock, never behind the latest append time), the others take the first's. Positions inside an
-- append are states no reader ever saw (a namespace move is one Namespace.Moved and a Tabular.Moved per table), and
-- with one time per append, "the last position appended at or before T" always ends an append, and a position is
-- settled to its append's end by one probe of the (appended_at, notification_id) index
-- (lakeledger/eventstore/append_time.py end_of_append). Events appended before this migration keep their times: a
-- time travel to one of their positions reads the log as it did.

CREATE OR REPLACE FUNCTION lakeledger_append_time() RETURNS trigger LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    last_at timestamptz;
    last_xmin xid;
BEGIN
    SELECT appended_at, xmin INTO last_at, last_xmin FROM lakeledger_events ORDER BY appended_at DESC LIMIT 1;
    IF last_xmin IS NOT NULL AND last_xmin = pg_current_xact_id()::xid THEN
        NEW.appended_at := last_at;  -- an earlier event of this append
    ELSE
        NEW.appended_at := greatest(clock_timestamp(), last_at);
    END IF;
    RETURN NEW;
END
$$;
