-- Who held what, when: every tuple the authorization projections derive from the log (hierarchy, creator
-- ownership, role membership, grants), with the log position and time it started and ended
-- (lakeledger/projections/access_history.py). A range with no end holds now. Nothing here is read from OpenFGA.
CREATE TABLE IF NOT EXISTS ll_access_ranges (
    id            bigserial PRIMARY KEY,
    object        text NOT NULL,
    relation      text NOT NULL,
    "user"        text NOT NULL,
    source        text NOT NULL,          -- hierarchy, creation, membership or grant
    from_seq      bigint NOT NULL,
    from_at       timestamptz NOT NULL,
    from_actor    text NOT NULL,
    from_request  text NOT NULL,
    to_seq        bigint,
    to_at         timestamptz,
    to_actor      text,
    to_request    text
);
CREATE UNIQUE INDEX IF NOT EXISTS ll_access_ranges_current ON ll_access_ranges (object, relation, "user")
    WHERE to_seq IS NULL;
CREATE INDEX IF NOT EXISTS ll_access_ranges_by_object ON ll_access_ranges (object, from_seq);
CREATE INDEX IF NOT EXISTS ll_access_ranges_by_user ON ll_access_ranges ("user", from_seq);

INSERT INTO ll_projection_positions (name, position) VALUES ('access-history', 0) ON CONFLICT (name) DO NOTHING;
