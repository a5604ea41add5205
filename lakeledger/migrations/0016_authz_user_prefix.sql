-- When an object goes (a table dropped for good, a namespace, a warehouse, a role), the authorization projections
-- find every tuple naming it, among them the role members written as users of the form "role:<id>#assignee": a
-- prefix search on "user" (LIKE 'role:<id>#%'). The plain indexes on "user" use the database's collation, which
-- cannot answer a prefix, so each such drop read the whole table (17 ms at 30,000 tuples, growing with the
-- catalog). text_pattern_ops indexes answer it.
CREATE INDEX IF NOT EXISTS ll_authz_tuples_by_user_prefix ON ll_authz_tuples ("user" text_pattern_ops);
CREATE INDEX IF NOT EXISTS ll_access_ranges_current_by_user_prefix ON ll_access_ranges ("user" text_pattern_ops)
    WHERE to_seq IS NULL;
