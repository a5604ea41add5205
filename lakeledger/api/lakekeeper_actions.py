"""The action names Lakekeeper's `/management/v1/permissions/*/access` answers, per object kind: its `ServerAction`,
`ProjectAction`, `WarehouseAction`, `NamespaceAction`, `TableAction`, `ViewAction` and `RoleAction` enums (Lakekeeper
0.13.3, conformance/specs/lakekeeper-management-open-api.yaml). Our authorization model names some actions
differently, and has some Lakekeeper has not (history, undrop, listing all, revoking): those are answered under
Lakekeeper's name, or not at all, since a client decoding the enum fails on a name it does not know."""

LAKEKEEPER_VERSION = "0.13.3"

ENUMS: dict[str, tuple[str, ...]] = {
    "server": ("create_project", "update_users", "delete_users", "list_users", "grant_admin", "provision_users",
               "read_assignments"),
    "project": ("create_warehouse", "delete", "rename", "list_warehouses", "create_role", "list_roles",
                "search_roles", "read_assignments", "grant_role_creator", "grant_create", "grant_describe",
                "grant_modify", "grant_select", "grant_project_admin", "grant_security_admin", "grant_data_admin",
                "get_endpoint_statistics"),
    "warehouse": ("create_namespace", "delete", "modify_storage", "modify_storage_credential", "get_config",
                  "get_metadata", "list_namespaces", "include_in_list", "deactivate", "activate", "rename",
                  "list_deleted_tabulars", "read_assignments", "grant_create", "grant_describe", "grant_modify",
                  "grant_select", "grant_pass_grants", "grant_manage_grants", "change_ownership", "get_all_tasks",
                  "control_all_tasks", "set_protection", "set_format_version_policy", "get_endpoint_statistics"),
    "namespace": ("create_table", "create_view", "create_generic_table", "create_namespace", "delete",
                  "update_properties", "get_metadata", "read_assignments", "grant_create", "grant_describe",
                  "grant_modify", "grant_select", "grant_pass_grants", "grant_manage_grants", "set_protection"),
    "table": ("drop", "write_data", "read_data", "get_metadata", "commit", "rename", "read_assignments",
              "grant_pass_grants", "grant_manage_grants", "grant_describe", "grant_select", "grant_modify",
              "change_ownership", "get_tasks", "control_tasks", "set_protection"),
    "view": ("drop", "commit", "get_metadata", "select", "rename", "read_assignments", "grant_pass_grants",
             "grant_manage_grants", "grant_describe", "grant_select", "grant_modify", "change_ownership", "get_tasks",
             "control_tasks", "set_protection"),
    # Lakekeeper's GenericTableAction (0.13's management document)
    "generic-table": ("drop", "undrop", "write_data", "read_data", "get_metadata", "rename", "include_in_list",
                      "get_tasks", "control_tasks", "set_protection", "read_assignments", "grant_pass_grants",
                      "grant_manage_grants", "grant_manage_tags", "grant_describe", "grant_select", "grant_modify",
                      "change_ownership"),
    "role": ("assume", "can_grant_assignee", "can_change_ownership", "delete", "update", "read", "read_assignments"),
    # Lakekeeper 0.14's LakekeeperTagAction
    "tag-definition": ("read", "update", "delete", "apply", "remove", "read_attachments", "read_grants"),
}

# our relation (without `can_`) -> Lakekeeper's action, where the names differ
_RENAMED: dict[str, dict[str, str]] = {
    "warehouse": {"update_storage": "modify_storage", "update_storage_credential": "modify_storage_credential"},
    "role": {"grant_assignee": "can_grant_assignee", "change_ownership": "can_change_ownership"},
}


def lakekeeper_action(kind: str, relation: str) -> str | None:
    """Lakekeeper's name of our ``can_…`` relation on a ``kind`` object, None where Lakekeeper has no such action."""
    action = relation.removeprefix("can_")
    action = _RENAMED.get(kind, {}).get(action, action)
    return action if action in ENUMS.get(kind, ()) else None


def answered(kind: str, allowed: list[str]) -> list[str]:
    """The allowed relations as Lakekeeper's actions, in its enum's order."""
    names = {lakekeeper_action(kind, relation) for relation in allowed} - {None}
    return [action for action in ENUMS.get(kind, ()) if action in names]


# ---- 0.14's vocabularies: its catalog actions, and its authorizer's (OpenFGA's) actions -----------------------

def _vocabulary(names: dict[str, str], renamed: dict[str, dict[str, str]]) -> dict[str, tuple[tuple[str, str], ...]]:
    """kind -> (Lakekeeper's name, our relation) for every name of ``names`` (space-separated per kind) we decide."""
    return {kind: tuple((name, "can_" + renamed.get(kind, {}).get(name, name)) for name in words.split())
            for kind, words in names.items()}


_READ_GRANTS = {"read_grants": "read_assignments"}

# Lakekeeper 0.14's Lakekeeper<Kind>ActionKind enums (the `/…/actions` answers, batch-check's `action`), less what
# we have no relation for (tasks, tags, endpoint statistics): those are never allowed here, so never answered.
CATALOG_ACTIONS = _vocabulary({
    "server": "create_project update_users delete_users list_users provision_users read_grants",
    "project": "create_warehouse delete rename get_metadata list_warehouses include_in_list create_role list_roles "
               "search_roles read_grants",
    "warehouse": "create_namespace delete update_storage get_config get_metadata list_namespaces list_everything "
                 "include_in_list deactivate activate rename list_deleted_tabulars modify_soft_deletion "
                 "set_protection set_format_version_policy accept_moved_namespace use read_grants",
    "namespace": "create_table create_view create_namespace delete update_properties get_metadata list_tables "
                 "list_views list_namespaces list_everything set_protection include_in_list create_generic_table "
                 "list_generic_tables move accept_moved_namespace read_grants",
    "table": "drop write_data read_data get_metadata commit rename include_in_list undrop set_protection read_grants",
    "view": "drop commit get_metadata select rename include_in_list undrop set_protection read_grants",
    "generic-table": "drop write_data read_data get_metadata rename include_in_list undrop set_protection "
                     "read_grants",
    "role": "read read_metadata delete update manage_role_assignments read_role_assignments update_source_system",
}, {kind: _READ_GRANTS for kind in ("server", "project", "warehouse", "namespace", "table", "view", "generic-table")}
   | {"role": {"read_metadata": "read", "manage_role_assignments": "grant_assignee",
               "read_role_assignments": "read_assignments", "update_source_system": "update"}})

# A user is no object of the model: what a caller may do to another user it may do on the server (to itself,
# everything), lakeledger/api/routers/users.py
USER_ACTIONS = (("read", "can_list_users"), ("update", "can_update_users"), ("delete", "can_delete_users"),
                ("read_role_assignments", "can_list_users"))

# Lakekeeper 0.14's OpenFGA<Kind>Action enums (`/permissions/…/authorizer-actions`): who may hand on what
AUTHORIZER_ACTIONS = _vocabulary({
    "server": "read_assignments grant_admin",
    "project": "read_assignments grant_role_creator grant_tag_creator grant_create grant_describe grant_modify "
               "grant_select grant_project_admin grant_security_admin grant_data_admin",
    "warehouse": "read_assignments grant_create grant_describe grant_modify grant_select grant_pass_grants "
                 "grant_manage_grants grant_manage_tags change_ownership",
    "namespace": "read_assignments grant_create grant_describe grant_modify grant_select grant_pass_grants "
                 "grant_manage_grants grant_manage_tags",
    **{kind: "read_assignments grant_pass_grants grant_manage_grants grant_manage_tags grant_describe grant_select "
             "grant_modify change_ownership" for kind in ("table", "view", "generic-table")},
    "role": "assume can_grant_assignee can_change_ownership read_assignments",
}, {"role": {"can_grant_assignee": "grant_assignee", "can_change_ownership": "change_ownership"}})
