"""The OpenFGA authorization model, as the JSON ``WriteAuthorizationModel`` takes (schema 1.1).

It follows the relation names and the inheritance Lakekeeper uses: grants are assigned to users or to role
members (``role:<id>#assignee``, roles nest); privileges flow down server → project → warehouse → namespace
(namespaces nest) → table/view; the API checks only the ``can_*`` relations, so that what a privilege allows can
change here without touching the callers. Built from small helpers rather than written out as JSON, because the
same few shapes repeat on every type and a typo in a repeated block would be a silent hole.

Change anything here and the next ``lakeledger migrate`` writes a new model version (lakeledger/authz/setup.py)."""

import hashlib
import json
import re

GRANTEES = ("user", "role#assignee")


# ---- rewrites ---------------------------------------------------------------------------------------------------

def this() -> dict:
    return {"this": {}}


def computed(relation: str) -> dict:
    return {"computedUserset": {"relation": relation}}


def from_(relation: str, tupleset: str) -> dict:
    """``relation from tupleset``: whoever has ``relation`` on the object(s) this one's ``tupleset`` names."""
    return {"tupleToUserset": {"tupleset": {"relation": tupleset}, "computedUserset": {"relation": relation}}}


def _rewrite(term) -> dict:
    return computed(term) if isinstance(term, str) else term


def any_of(*terms) -> dict:
    """Union; a plain string is a relation of the same object."""
    rewrites = [_rewrite(t) for t in terms]
    return rewrites[0] if len(rewrites) == 1 else {"union": {"child": rewrites}}


def all_of(*terms) -> dict:
    return {"intersection": {"child": [_rewrite(t) for t in terms]}}


def but_not(base, subtract) -> dict:
    return {"difference": {"base": _rewrite(base), "subtract": _rewrite(subtract)}}


class Relations:
    """The relations of one type, with what may be written directly to each (``directly_related_user_types``)."""

    def __init__(self):
        self.rewrites: dict[str, dict] = {}
        self.direct: dict[str, list[dict]] = {}

    def assignable(self, name: str, *also, grantees: tuple[str, ...] = GRANTEES) -> None:
        """A relation tuples are written to (grantees: ``type`` or ``type#relation``), plus whatever ``also`` says."""
        self.direct[name] = [_user_type(g) for g in grantees]
        self.rewrites[name] = any_of(this(), *also)

    def computed(self, name: str, *terms) -> None:
        self.rewrites[name] = any_of(*terms)

    def all_of(self, name: str, *terms) -> None:
        self.rewrites[name] = all_of(*terms)

    def type_definition(self, type_name: str) -> dict:
        definition: dict = {"type": type_name, "relations": self.rewrites}
        if self.direct:
            definition["metadata"] = {"relations": {
                name: {"directly_related_user_types": types} for name, types in self.direct.items()}}
        return definition


def _user_type(grantee: str) -> dict:
    type_name, _, relation = grantee.partition("#")
    if relation == "*":  # every object of the type (OpenFGA's wildcard ``type:*``)
        return {"type": type_name, "wildcard": {}}
    return {"type": type_name, "relation": relation} if relation else {"type": type_name}


# Managed access (Lakekeeper's): a warehouse or namespace whose ``managed_access`` holds (written as the wildcards
# ``user:*`` and ``role:*``, so a check may ask it of ``user:*``) puts everything below it under grant authority
# alone: there, owning an object no longer gives ``manage_grants`` on it; only ``manage_grants`` held directly or
# from above (a project's security_admin, a warehouse's or namespace's grant managers) does.
MANAGED_ACCESS_GRANTEES = ("user#*", "role#*")


def _managed_access(r: "Relations", inherited: str | None) -> None:
    """The switch on a warehouse (``inherited`` None: nothing above it can be managed) or a namespace (``inherited``
    the tupleset of its parent, whose switch reaches it)."""
    r.assignable("managed_access", grantees=MANAGED_ACCESS_GRANTEES)
    r.computed("managed_access_inheritance", "managed_access",
               *([from_("managed_access_inheritance", inherited)] if inherited else []))
    r.computed("can_set_managed_access", "manage_grants")


# ---- the types --------------------------------------------------------------------------------------------------

def _grants(r: Relations, privileges: tuple[str, ...]) -> None:
    """Who may grant what on an object. ``manage_grants`` may grant anything there (and revoke); ``pass_grants``
    only lets its holder pass on a privilege they hold themselves, never ``pass_grants`` or ``manage_grants``."""
    for privilege in privileges:
        r.computed(f"can_grant_{privilege}", "manage_grants", all_of(privilege, "pass_grants"))
    r.computed("can_grant_pass_grants", "manage_grants")
    r.computed("can_grant_manage_grants", "manage_grants")
    r.computed("can_change_ownership", "manage_grants")
    r.computed("can_revoke_grants", "manage_grants")
    r.computed("can_read_assignments", *[f"can_grant_{p}" for p in privileges], "can_grant_pass_grants",
               "can_grant_manage_grants", "can_change_ownership")


def _securable(r: Relations, parent: str, privileges: tuple[str, ...]) -> None:
    """Ownership, the assignable privileges and their inheritance from ``parent`` (the tupleset naming the
    object above). Holding a stronger privilege implies the weaker ones: modify ⊃ select ⊃ describe, and
    create ⊃ describe."""
    r.assignable("ownership")
    r.assignable("pass_grants")
    # under managed access from above, owning no longer gives the right to grant
    r.assignable("manage_grants", but_not("ownership", from_("managed_access_inheritance", parent)),
                 from_("manage_grants", parent))
    r.assignable("describe", "ownership", "select", *(["create"] if "create" in privileges else []),
                 from_("describe", parent))
    r.assignable("select", "ownership", "modify", from_("select", parent))
    if "create" in privileges:
        r.assignable("create", "ownership", from_("create", parent))
    r.assignable("modify", "ownership", from_("modify", parent))
    if "manage_tags" in privileges:
        r.assignable("manage_tags", from_("manage_tags", parent))


def _maintenance(r: Relations, above: dict) -> None:
    """Maintenance policies (lakeledger/domain/maintenance_policy.py): ``manage_maintenance`` sets and removes them on
    the object and, by inheritance, below it. It decides what the catalog deletes on its own (snapshots past an age,
    unreferenced files), so it is not part of ``modify``: a writer may change data, not how long its history is
    kept. Owners hold it, and so does whoever holds it above (a warehouse's from the project's data admins, and so
    its project admins and the server's operators). Grantable like any privilege of the object (``*_PRIVILEGES``
    below): an extension of Lakekeeper's vocabulary, as its open grants API allows. Whoever may see the object may
    read its policies."""
    r.assignable("manage_maintenance", "ownership", above)
    r.computed("can_set_maintenance_policy", "manage_maintenance")
    r.computed("can_read_maintenance_policy", "can_get_metadata")


def _receives_moved_namespaces(r: Relations) -> None:
    """Where a namespace may be moved to (a warehouse's root, or under a namespace): a new child may be made there,
    and grants given."""
    r.all_of("can_accept_moved_namespace", "create", "manage_grants")


def _user() -> dict:
    return {"type": "user"}


def _role() -> dict:
    r = Relations()
    r.assignable("project", grantees=("project",))
    r.assignable("ownership")
    # who holds the role: users, and every holder of another role (nesting); its owner holds it too
    r.assignable("assignee", "ownership")
    r.computed("can_assume", "assignee")
    r.computed("can_grant_assignee", "ownership", from_("security_admin", "project"))
    r.computed("can_change_ownership", "can_grant_assignee")
    r.computed("can_update", "can_grant_assignee")
    r.computed("can_delete", "can_grant_assignee")
    r.computed("can_read", "assignee", "can_grant_assignee", from_("can_list_roles", "project"))
    r.computed("can_read_assignments", "can_read")
    return r.type_definition("role")


def _server() -> dict:
    r = Relations()
    r.assignable("project", grantees=("project",))
    # admin: administers the server and sees every project, but reads no data without granting itself some
    r.assignable("admin")
    # operator: machines that provision the catalog; project admin of every project
    r.assignable("operator")
    for action in ("can_create_project", "can_list_all_projects", "can_list_users", "can_provision_users",
                   "can_update_users", "can_delete_users", "can_read_assignments", "can_grant_admin",
                   "can_grant_operator", "can_revoke_grants", "can_read_history", "can_set_maintenance_mode",
                   "can_manage_warehouse_specs"):
        r.computed(action, "admin", "operator")
    return r.type_definition("server")


def _project() -> dict:
    r = Relations()
    r.assignable("server", grantees=("server",))
    r.assignable("warehouse", grantees=("warehouse",))
    r.assignable("project_admin", from_("operator", "server"))
    r.assignable("security_admin", "project_admin")  # grants and ownership, not data
    r.assignable("data_admin", "project_admin")  # data and structure, not grants
    r.assignable("role_creator", "security_admin")
    r.assignable("tag_creator", "security_admin", "data_admin")  # creates tag definitions, manages none of them
    r.assignable("describe", "select", "create", "data_admin", "security_admin")
    r.assignable("select", "modify")
    r.assignable("create", "data_admin")
    r.assignable("modify", "project_admin")
    r.computed("can_create_warehouse", "create")
    r.computed("can_delete", "modify")
    r.computed("can_rename", "modify")
    # seeing the project: a privilege on it, or on anything inside it, or administering the server
    r.computed("can_get_metadata", "describe", from_("can_get_metadata", "warehouse"), from_("admin", "server"))
    r.computed("can_list_warehouses", "can_get_metadata")
    r.computed("can_include_in_list", "can_get_metadata")
    r.computed("can_create_role", "role_creator")
    r.computed("can_list_roles", "can_get_metadata")
    r.computed("can_search_roles", "can_list_roles")
    r.computed("can_read_assignments", "security_admin", from_("admin", "server"))
    for privilege in ("describe", "select", "create", "modify", "security_admin", "data_admin", "role_creator",
                      "tag_creator"):
        r.computed(f"can_grant_{privilege}", "security_admin", from_("admin", "server"))
    r.computed("can_grant_project_admin", "project_admin", from_("admin", "server"))
    r.computed("can_revoke_grants", "security_admin", from_("admin", "server"))
    r.computed("can_create_tag_definition", "tag_creator")
    r.computed("can_list_tag_definitions", "can_get_metadata")
    return r.type_definition("project")


# ``manage_tags`` (Lakekeeper 0.14) attaches governance tags without ``modify``, which does so too here;
# ``manage_maintenance`` (ours) sets maintenance policies, which ``modify`` does not
WAREHOUSE_PRIVILEGES = ("describe", "select", "create", "modify", "manage_tags", "manage_maintenance")


def _warehouse() -> dict:
    r = Relations()
    r.assignable("project", grantees=("project",))
    r.assignable("namespace", grantees=("namespace",))  # its top-level namespaces, to see the way down to a grant
    r.assignable("ownership")
    r.assignable("pass_grants")
    r.assignable("manage_grants", "ownership", from_("security_admin", "project"))
    r.assignable("describe", "ownership", "select", "create", from_("describe", "project"))
    r.assignable("select", "ownership", "modify", from_("select", "project"))
    r.assignable("create", "ownership", from_("create", "project"))
    r.assignable("modify", "ownership", from_("modify", "project"), from_("data_admin", "project"))
    r.assignable("manage_tags", from_("security_admin", "project"))
    r.computed("can_get_metadata", "describe", from_("can_get_metadata", "namespace"))
    for action in ("can_get_config", "can_use", "can_list_namespaces", "can_include_in_list",
                   "can_list_deleted_tabulars"):
        r.computed(action, "can_get_metadata")
    r.computed("can_list_everything", "describe")
    r.computed("can_read_history", "describe")
    r.computed("can_create_namespace", "create")
    _receives_moved_namespaces(r)
    for action in ("can_delete", "can_rename", "can_update_storage", "can_update_storage_credential",
                   "can_deactivate", "can_activate", "can_set_protection", "can_modify_soft_deletion",
                   "can_set_format_version_policy"):
        r.computed(action, "modify")
    r.computed("can_set_tags", "modify", "manage_tags")
    _maintenance(r, from_("data_admin", "project"))
    _grants(r, WAREHOUSE_PRIVILEGES)
    _managed_access(r, None)
    return r.type_definition("warehouse")


NAMESPACE_PRIVILEGES = ("describe", "select", "create", "modify", "manage_tags", "manage_maintenance")


def _namespace() -> dict:
    r = Relations()
    r.assignable("parent", grantees=("namespace", "warehouse"))
    r.assignable("child", grantees=("namespace", "table", "view", "generic-table"))
    _securable(r, "parent", NAMESPACE_PRIVILEGES)
    r.computed("can_get_metadata", "describe", from_("can_get_metadata", "child"))
    for action in ("can_list_namespaces", "can_list_tables", "can_list_views", "can_list_generic_tables",
                   "can_include_in_list"):
        r.computed(action, "can_get_metadata")
    r.computed("can_list_everything", "describe")
    r.computed("can_read_history", "describe")
    for action in ("can_create_namespace", "can_create_table", "can_create_view", "can_create_generic_table"):
        r.computed(action, "create")
    for action in ("can_delete", "can_update_properties", "can_set_protection"):
        r.computed(action, "modify")
    r.computed("can_set_tags", "modify", "manage_tags")
    _maintenance(r, from_("manage_maintenance", "parent"))
    # A move hands the namespace's tree to whoever holds rights where it lands (they inherit them there), and
    # takes it from whoever held them where it was: the right to grant, at both ends (as Lakekeeper 0.14).
    r.computed("can_move", "manage_grants")
    _receives_moved_namespaces(r)
    _grants(r, NAMESPACE_PRIVILEGES)
    _managed_access(r, "parent")
    return r.type_definition("namespace")


TABULAR_PRIVILEGES = ("describe", "select", "modify", "manage_tags")
TABLE_PRIVILEGES = (*TABULAR_PRIVILEGES, "manage_maintenance")  # only Iceberg tables are maintained


def _tabular(type_name: str, read_action: str) -> dict:
    r = Relations()
    r.assignable("parent", grantees=("namespace",))
    privileges = TABLE_PRIVILEGES if type_name == "table" else TABULAR_PRIVILEGES
    _securable(r, "parent", privileges)
    r.computed("can_get_metadata", "describe")
    r.computed("can_include_in_list", "can_get_metadata")
    r.computed("can_read_history", "describe")
    r.computed(read_action, "select")
    for action in ("can_commit", "can_drop", "can_undrop", "can_rename", "can_set_protection"):
        r.computed(action, "modify")
    r.computed("can_set_tags", "modify", "manage_tags")
    if type_name != "view":  # a table's and a generic table's files are written by engines
        r.computed("can_write_data", "modify")
    if type_name == "table":  # only Iceberg tables have files, snapshots and manifests to look after
        _maintenance(r, from_("manage_maintenance", "parent"))
    _grants(r, privileges)
    return r.type_definition(type_name)


def _tag_definition() -> dict:
    """A governance tag definition: its owner and the project's security admins manage it; ``apply`` lets its
    holders attach it (and remove it) where they may also change the target (``can_set_tags`` there)."""
    r = Relations()
    r.assignable("project", grantees=("project",))
    r.assignable("ownership")
    r.assignable("apply", "ownership", from_("data_admin", "project"))
    r.computed("can_manage", "ownership", from_("security_admin", "project"))
    for action in ("can_update", "can_delete", "can_read_attachments", "can_read_grants", "can_read_assignments",
                   "can_change_ownership", "can_grant_apply", "can_revoke_grants"):
        r.computed(action, "can_manage")
    r.computed("can_apply", "apply", "can_manage")
    r.computed("can_remove", "can_apply")
    r.computed("can_read", "can_apply", from_("can_get_metadata", "project"))
    return r.type_definition("tag-definition")


def authorization_model() -> dict:
    return {"schema_version": "1.1", "type_definitions": [
        _user(), _role(), _server(), _project(), _warehouse(), _namespace(),
        _tabular("table", "can_read_data"), _tabular("view", "can_select"),
        _tabular("generic-table", "can_read_data"), _tag_definition()]}


def normalized(model: dict) -> str:
    """The model as canonical JSON, empty and bookkeeping fields left out, so that the model we build and the one
    OpenFGA reads back (which adds ids, empty ``object`` fields and source info) compare equal when they mean
    the same thing."""
    def clean(value):
        if isinstance(value, dict):
            # the SDK's models read back with snake_case keys (computed_userset) where the JSON has camelCase
            items = {_snake(k): clean(v) for k, v in value.items() if _snake(k) not in _BOOKKEEPING}
            # {"this": {}} (tuples written directly) and {"wildcard": {}} (``type:*``) are the empty objects that
            # mean something
            return {k: v for k, v in items.items()
                    if v not in (None, "", []) and (v != {} or k in ("this", "wildcard"))}
        if isinstance(value, list):
            return [clean(v) for v in value]
        return value

    kept = {"schema_version": model.get("schema_version"), "type_definitions": model.get("type_definitions", []),
            "conditions": model.get("conditions")}
    return json.dumps(clean(kept), sort_keys=True, separators=(",", ":"))


_BOOKKEEPING = ("id", "module", "source_info", "file")


def _snake(key: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", key).lower()


def digest(model: dict) -> str:
    return hashlib.sha256(normalized(model).encode()).hexdigest()
