-- Read models of the catalog. Only projections write these tables; they can be dropped and rebuilt
-- from the event log at any time.

CREATE TABLE IF NOT EXISTS ll_projection_positions (
    name        text PRIMARY KEY,
    position    bigint NOT NULL DEFAULT 0,
    updated_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS ll_server (
    id              uuid PRIMARY KEY,
    server_id       uuid NOT NULL,
    is_operator     boolean NOT NULL,
    bootstrapped_at timestamptz NOT NULL,
    bootstrapped_by text NOT NULL
);

CREATE TABLE IF NOT EXISTS ll_projects (
    id          uuid PRIMARY KEY,
    name        text NOT NULL,
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz
);

CREATE TABLE IF NOT EXISTS ll_warehouses (
    id              uuid PRIMARY KEY,
    project_id      uuid NOT NULL,
    name            text NOT NULL,
    storage_profile jsonb NOT NULL,
    delete_profile  jsonb NOT NULL,
    status          text NOT NULL,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz
);
CREATE INDEX IF NOT EXISTS ll_warehouses_by_name ON ll_warehouses (project_id, name);

CREATE TABLE IF NOT EXISTS ll_namespaces (
    id            uuid PRIMARY KEY,
    warehouse_id  uuid NOT NULL,
    parent_id     uuid,
    path          text[] NOT NULL,
    properties    jsonb NOT NULL,
    created_at    timestamptz NOT NULL,
    updated_at    timestamptz
);
CREATE INDEX IF NOT EXISTS ll_namespaces_by_path ON ll_namespaces (warehouse_id, path);
CREATE INDEX IF NOT EXISTS ll_namespaces_by_parent ON ll_namespaces (parent_id);

-- Tables and views ("tabulars") share one name space per namespace.
CREATE TABLE IF NOT EXISTS ll_tabulars (
    id                 uuid PRIMARY KEY,
    typ                text NOT NULL,
    warehouse_id       uuid NOT NULL,
    namespace_id       uuid NOT NULL,
    namespace          text[] NOT NULL,
    name               text NOT NULL,
    location           text NOT NULL,
    metadata_location  text,
    created_at         timestamptz NOT NULL,
    updated_at         timestamptz,
    dropped_at         timestamptz,
    purge_requested    boolean
);
CREATE INDEX IF NOT EXISTS ll_tabulars_by_name ON ll_tabulars (warehouse_id, namespace, name) WHERE dropped_at IS NULL;
CREATE INDEX IF NOT EXISTS ll_tabulars_by_namespace ON ll_tabulars (namespace_id, name) WHERE dropped_at IS NULL;
CREATE INDEX IF NOT EXISTS ll_tabulars_by_location ON ll_tabulars (warehouse_id, location);
