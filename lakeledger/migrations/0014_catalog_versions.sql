-- The catalog with validity ranges, for time travel (lakeledger/projections/catalog_versions.py): every version of a
-- namespace and every placement of a table or view (warehouse, namespace, name) lives from the log position that
-- made it (from_seq, inclusive) to the one that ended it (to_seq, exclusive; 9223372036854775807 while it holds),
-- so "the catalog at position p" is the rows with from_seq <= p < to_seq, found by index at any log length.
-- A table's metadata file changes with every commit but its placement does not, so metadata versions are a table
-- of their own with no end: the version at p is the last one from at or before p. Names and paths are in "C"
-- order, the order in which the pure fold (lakeledger/projections/as_of.py) and the page tokens compare them.

CREATE TABLE IF NOT EXISTS ll_warehouse_origins (
    id        uuid PRIMARY KEY,
    from_seq  bigint NOT NULL
);

CREATE TABLE IF NOT EXISTS ll_namespace_versions (
    id            uuid NOT NULL,
    warehouse_id  uuid NOT NULL,
    parent        text[] COLLATE "C" NOT NULL,  -- path without its last part: the list a namespace shows in
    path          text[] COLLATE "C" NOT NULL,
    properties    jsonb NOT NULL,
    from_seq      bigint NOT NULL,
    to_seq        bigint NOT NULL DEFAULT 9223372036854775807,
    soft_dropped  boolean NOT NULL DEFAULT false,  -- ended by a drop an undrop may reverse
    PRIMARY KEY (id, from_seq)
);
CREATE INDEX IF NOT EXISTS ll_namespace_versions_by_path
    ON ll_namespace_versions (warehouse_id, path, from_seq) INCLUDE (to_seq);
CREATE INDEX IF NOT EXISTS ll_namespace_versions_by_parent
    ON ll_namespace_versions (warehouse_id, parent, path, from_seq) INCLUDE (to_seq);

CREATE TABLE IF NOT EXISTS ll_tabular_placements (
    id            uuid NOT NULL,
    warehouse_id  uuid NOT NULL,
    typ           text NOT NULL,
    namespace_id  uuid NOT NULL,
    namespace     text[] COLLATE "C" NOT NULL,
    name          text COLLATE "C" NOT NULL,
    from_seq      bigint NOT NULL,
    to_seq        bigint NOT NULL DEFAULT 9223372036854775807,
    soft_dropped  boolean NOT NULL DEFAULT false,
    PRIMARY KEY (id, from_seq)
);
-- loadTable: the placement of one name at p
CREATE INDEX IF NOT EXISTS ll_tabular_placements_by_name
    ON ll_tabular_placements (warehouse_id, namespace, name, typ, from_seq) INCLUDE (to_seq, id);
-- a page of names: in name order, the range checked in the index; when few of the namespace's names were
-- there at p, the rows that began by p (or ended after it) are fewer than the name-order walk would visit
CREATE INDEX IF NOT EXISTS ll_tabular_placements_by_namespace
    ON ll_tabular_placements (namespace_id, typ, name, from_seq) INCLUDE (to_seq);
CREATE INDEX IF NOT EXISTS ll_tabular_placements_by_start
    ON ll_tabular_placements (namespace_id, typ, from_seq) INCLUDE (to_seq, name);
CREATE INDEX IF NOT EXISTS ll_tabular_placements_by_end
    ON ll_tabular_placements (namespace_id, typ, to_seq) INCLUDE (from_seq, name);

CREATE TABLE IF NOT EXISTS ll_tabular_metadata_versions (
    id                 uuid NOT NULL,
    from_seq           bigint NOT NULL,
    metadata_location  text,
    location           text,
    PRIMARY KEY (id, from_seq)
);

INSERT INTO ll_projection_positions (name, position) VALUES ('catalog-versions', 0) ON CONFLICT (name) DO NOTHING;
