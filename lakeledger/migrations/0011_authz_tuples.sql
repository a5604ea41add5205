-- The OpenFGA tuples the authz-tuples projection (lakeledger/projections/authz_tuples.py) has written, mirrored in the
-- transaction that moves its position: what it must delete when an object goes (every tuple naming it), the
-- parent a table had before it was undropped elsewhere, and which store they were written to (a memory OpenFGA
-- forgets everything on restart, and `migrate` then makes a new store: the projection starts over for it).
CREATE TABLE IF NOT EXISTS ll_authz_tuples (
    object    text NOT NULL,
    relation  text NOT NULL,
    "user"    text NOT NULL,
    source    text NOT NULL,  -- what wrote it: hierarchy, creation, membership or grant
    PRIMARY KEY (object, relation, "user")
);
CREATE INDEX IF NOT EXISTS ll_authz_tuples_by_user ON ll_authz_tuples ("user");

CREATE TABLE IF NOT EXISTS ll_authz_tuples_store (
    only_row  boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    store_id  text NOT NULL
);

INSERT INTO ll_projection_positions (name, position) VALUES ('authz-tuples', 0) ON CONFLICT (name) DO NOTHING;
