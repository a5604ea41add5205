-- An append whose read-model writes need no answer from the database is sent in one round trip
-- (lakeledger/eventstore/recorder.py): lock, insert, the read model's writes, this call, commit. The read model's position
-- moves to the log's head here, under the events-table lock, if the only events past it are the ones just
-- inserted; otherwise (it has not applied an earlier event) the whole append is refused with LL001 and made
-- again the slower way, which applies the gap first. Gaps in positions left by rolled-back appends are not
-- events, so they do not count.
CREATE OR REPLACE FUNCTION ll_advance_past_append(projection text, appended integer) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    moved integer;
BEGIN
    UPDATE ll_projection_positions AS p
       SET position = (SELECT max(notification_id) FROM lakeledger_events), updated_at = now()
     WHERE p.name = projection
       AND (SELECT count(*) FROM (SELECT 1 FROM lakeledger_events WHERE notification_id > p.position
                                  ORDER BY notification_id LIMIT appended + 1) AS beyond) = appended;
    GET DIAGNOSTICS moved = ROW_COUNT;
    IF moved = 0 THEN
        RAISE EXCEPTION 'the % read model has not applied every event before this append', projection
            USING ERRCODE = 'LL001';
    END IF;
END
$$;
