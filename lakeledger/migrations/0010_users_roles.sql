-- Users, roles and role membership as they are now: the users-roles projection's read model
-- (lakeledger/projections/users_roles.py), applied inside each append of a user or role event, rebuildable from the log.

CREATE TABLE IF NOT EXISTS ll_users (
    id                 text PRIMARY KEY,          -- <idp>~<subject>
    name               text NOT NULL,
    email              text,
    user_type          text NOT NULL,
    last_updated_with  text NOT NULL,
    created_at         timestamptz NOT NULL,
    updated_at         timestamptz
);
CREATE INDEX IF NOT EXISTS ll_users_by_creation ON ll_users (created_at, id);

CREATE TABLE IF NOT EXISTS ll_roles (
    id           uuid PRIMARY KEY,
    project_id   uuid NOT NULL,
    name         text NOT NULL,
    description  text,
    provider_id  text NOT NULL,
    source_id    text NOT NULL,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz
);
CREATE INDEX IF NOT EXISTS ll_roles_by_creation ON ll_roles (project_id, created_at, id);

CREATE TABLE IF NOT EXISTS ll_role_members (
    role_id      uuid NOT NULL,
    member_type  text NOT NULL,                   -- 'user' or 'role'
    member_id    text NOT NULL,                   -- a user id, or a role id as text
    project_id   uuid NOT NULL,
    added_at     timestamptz NOT NULL,
    PRIMARY KEY (role_id, member_type, member_id)
);
-- the roles a user or role belongs to (a deletion's cascade, the membership-loop check walking upwards)
CREATE INDEX IF NOT EXISTS ll_role_members_by_member ON ll_role_members (member_type, member_id);

INSERT INTO ll_projection_positions (name, position) VALUES ('users-roles', 0) ON CONFLICT (name) DO NOTHING;

-- The server-level history lists users and roles too (lakeledger/projections/history.py SERVER_LEVEL).
CREATE INDEX IF NOT EXISTS ll_history_of_server_and_identities ON ll_history (sequence)
    WHERE entity_type IN ('server', 'project', 'warehouse', 'user', 'role');
