-- Governance tags (Lakekeeper 0.14): the tag definitions of each project and where each is attached, as they are
-- now: the tags projection's read model (lakeledger/projections/tags.py), applied inside each append of a tag
-- definition's events, rebuildable from the log.

CREATE TABLE IF NOT EXISTS ll_tag_definitions (
    id              uuid PRIMARY KEY,
    project_id      uuid NOT NULL,
    name            text NOT NULL,
    name_key        text NOT NULL,                -- the name any case (domain/names.py name_key): unique in the project
    description     text,
    scope           text[] NOT NULL,
    value_kind      text NOT NULL,                -- 'marker', 'free-text' or 'enumerated'
    allowed_values  text[] NOT NULL,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz
);
CREATE INDEX IF NOT EXISTS ll_tag_definitions_by_creation ON ll_tag_definitions (project_id, created_at, id);
CREATE INDEX IF NOT EXISTS ll_tag_definitions_by_name ON ll_tag_definitions (project_id, name_key);

-- One row per attachment; a column is its table's id and its Iceberg field id (-1 for any other target, so that
-- the key has no NULL in it).
CREATE TABLE IF NOT EXISTS ll_tags (
    definition_id  uuid NOT NULL,
    warehouse_id   uuid NOT NULL,
    target_type    text NOT NULL,                 -- warehouse, namespace, table, view, generic-table, column
    target_id      uuid NOT NULL,
    field_id       integer NOT NULL,
    value          text,
    created_at     timestamptz NOT NULL,
    updated_at     timestamptz,
    PRIMARY KEY (definition_id, target_type, target_id, field_id)
);
CREATE INDEX IF NOT EXISTS ll_tags_by_target ON ll_tags (target_id, target_type);
CREATE INDEX IF NOT EXISTS ll_tags_by_definition ON ll_tags (definition_id, created_at);

INSERT INTO ll_projection_positions (name, position) VALUES ('tags', 0) ON CONFLICT (name) DO NOTHING;

-- The server-level history lists tag definitions too (lakeledger/projections/history.py SERVER_LEVEL).
CREATE INDEX IF NOT EXISTS ll_history_of_server_identities_and_tags ON ll_history (sequence)
    WHERE entity_type IN ('server', 'project', 'warehouse', 'user', 'role', 'grant', 'tag-definition');
