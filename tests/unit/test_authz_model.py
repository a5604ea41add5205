"""The pure parts of authorization: the OpenFGA model we build (consistent before OpenFGA ever sees it), object
naming, hierarchy tuples, the settings and the allow-all backend."""

import asyncio
import copy

import pytest

from lakeledger.authz.authorizer import EVERYTHING, AllowAll, Check
from lakeledger.authz.model import authorization_model, digest, normalized
from lakeledger.authz.objects import RelationTuple, hierarchy, id_of, obj, principal_of, role_members, user

MODEL = authorization_model()
TYPES = {t["type"]: t for t in MODEL["type_definitions"]}


def _direct_types(type_name: str, relation: str) -> list[dict]:
    return TYPES[type_name].get("metadata", {}).get("relations", {}).get(relation, {}).get(
        "directly_related_user_types", [])


def _rewrites(rewrite: dict):
    yield rewrite
    for key in ("union", "intersection"):
        for child in rewrite.get(key, {}).get("child", []):
            yield from _rewrites(child)
    if "difference" in rewrite:
        yield from _rewrites(rewrite["difference"]["base"])
        yield from _rewrites(rewrite["difference"]["subtract"])


def test_the_model_has_the_types_of_the_catalog():
    assert list(TYPES) == ["user", "role", "server", "project", "warehouse", "namespace", "table", "view",
                           "generic-table", "tag-definition"]
    assert MODEL["schema_version"] == "1.1"


def test_every_relation_a_rewrite_names_exists_where_it_is_looked_up():
    for type_name, definition in TYPES.items():
        relations = definition.get("relations", {})
        for name, rewrite in relations.items():
            for part in _rewrites(rewrite):
                if "computedUserset" in part:
                    assert part["computedUserset"]["relation"] in relations, (type_name, name, part)
                if "tupleToUserset" in part:
                    tupleset = part["tupleToUserset"]["tupleset"]["relation"]
                    wanted = part["tupleToUserset"]["computedUserset"]["relation"]
                    targets = [t["type"] for t in _direct_types(type_name, tupleset)]
                    assert targets, (type_name, name, f"{tupleset} is not assignable")
                    assert any(wanted in TYPES[t].get("relations", {}) for t in targets), (type_name, name, part)
                if "this" in part:
                    assert _direct_types(type_name, name), (type_name, name, "direct, but no types may be written")


def test_grantees_are_users_and_role_members_and_roles_nest():
    grantees = [{"type": "user"}, {"type": "role", "relation": "assignee"}]
    for type_name in ("warehouse", "namespace", "table", "view", "generic-table"):
        for privilege in ("ownership", "describe", "select", "modify", "manage_grants", "pass_grants"):
            assert _direct_types(type_name, privilege) == grantees, (type_name, privilege)
    assert _direct_types("role", "assignee") == grantees
    for privilege in ("ownership", "apply"):
        assert _direct_types("tag-definition", privilege) == grantees


def test_the_actions_the_api_checks_exist():
    wanted = {
        "server": {"can_create_project", "can_list_all_projects", "can_grant_admin"},
        "project": {"can_create_warehouse", "can_get_metadata", "can_create_role", "can_list_roles",
                    "can_grant_select", "can_read_assignments"},
        "warehouse": {"can_create_namespace", "can_get_config", "can_list_namespaces", "can_delete", "can_rename",
                      "can_update_storage", "can_list_deleted_tabulars", "can_read_history", "can_grant_select",
                      "can_change_ownership", "can_accept_moved_namespace"},
        "namespace": {"can_create_table", "can_create_view", "can_create_generic_table", "can_list_generic_tables",
                      "can_create_namespace", "can_delete",
                      "can_update_properties", "can_list_tables", "can_get_metadata", "can_set_protection",
                      "can_move", "can_accept_moved_namespace"},
        "table": {"can_get_metadata", "can_read_data", "can_write_data", "can_commit", "can_drop", "can_undrop",
                  "can_rename", "can_read_history", "can_grant_select", "can_grant_pass_grants"},
        "view": {"can_get_metadata", "can_select", "can_commit", "can_drop", "can_undrop", "can_rename"},
        "generic-table": {"can_get_metadata", "can_read_data", "can_write_data", "can_drop", "can_undrop",
                          "can_rename", "can_set_protection", "can_include_in_list", "can_read_history"},
        "role": {"can_assume", "can_grant_assignee", "can_delete", "can_read"},
        "tag-definition": {"can_read", "can_update", "can_delete", "can_apply", "can_remove", "can_read_attachments",
                           "can_read_grants", "can_read_assignments", "can_change_ownership", "can_grant_apply"},
    }
    for type_name, actions in wanted.items():
        assert actions <= set(TYPES[type_name]["relations"]), (type_name, actions - set(TYPES[type_name]["relations"]))


def test_a_move_takes_the_right_to_grant_at_both_ends():
    """Lakekeeper 0.14's rule: manage_grants on the namespace moved; create and manage_grants where it lands."""
    assert TYPES["namespace"]["relations"]["can_move"] == {"computedUserset": {"relation": "manage_grants"}}
    accept = {"intersection": {"child": [{"computedUserset": {"relation": "create"}},
                                         {"computedUserset": {"relation": "manage_grants"}}]}}
    for type_name in ("warehouse", "namespace"):
        assert TYPES[type_name]["relations"]["can_accept_moved_namespace"] == accept, type_name


def test_pass_grants_passes_only_what_one_holds():
    table = TYPES["table"]["relations"]
    assert table["can_grant_select"] == {"union": {"child": [
        {"computedUserset": {"relation": "manage_grants"}},
        {"intersection": {"child": [{"computedUserset": {"relation": "select"}},
                                    {"computedUserset": {"relation": "pass_grants"}}]}}]}}
    assert table["can_grant_pass_grants"] == {"computedUserset": {"relation": "manage_grants"}}


def test_under_managed_access_ownership_gives_no_right_to_grant():
    """Lakekeeper's rule: ``manage_grants`` of a namespace, table, view or generic table is what is granted, or
    ownership but not managed access inherited from its parent, or ``manage_grants`` from its parent; the switch is
    written as wildcards on a warehouse (reaching its own contents) or a namespace (and everything below)."""
    wildcards = [{"type": "user", "wildcard": {}}, {"type": "role", "wildcard": {}}]
    for type_name in ("warehouse", "namespace"):
        assert _direct_types(type_name, "managed_access") == wildcards, type_name
        assert TYPES[type_name]["relations"]["can_set_managed_access"] == {
            "computedUserset": {"relation": "manage_grants"}}
    assert TYPES["warehouse"]["relations"]["managed_access_inheritance"] == {
        "computedUserset": {"relation": "managed_access"}}
    assert TYPES["namespace"]["relations"]["managed_access_inheritance"] == {"union": {"child": [
        {"computedUserset": {"relation": "managed_access"}},
        {"tupleToUserset": {"tupleset": {"relation": "parent"},
                            "computedUserset": {"relation": "managed_access_inheritance"}}}]}}
    for type_name in ("namespace", "table", "view", "generic-table"):
        assert TYPES[type_name]["relations"]["manage_grants"] == {"union": {"child": [
            {"this": {}},
            {"difference": {"base": {"computedUserset": {"relation": "ownership"}},
                            "subtract": {"tupleToUserset": {"tupleset": {"relation": "parent"},
                                                            "computedUserset": {
                                                                "relation": "managed_access_inheritance"}}}}},
            {"tupleToUserset": {"tupleset": {"relation": "parent"},
                                "computedUserset": {"relation": "manage_grants"}}}]}}, type_name
    # a warehouse's owner keeps the right to grant: nothing above a warehouse is managed
    assert {"computedUserset": {"relation": "ownership"}} in \
        TYPES["warehouse"]["relations"]["manage_grants"]["union"]["child"]
    # the wildcard is part of what a model means: dropping it is a change
    without_wildcard = copy.deepcopy(MODEL)
    types = {t["type"]: t for t in without_wildcard["type_definitions"]}
    for user_type in types["warehouse"]["metadata"]["relations"]["managed_access"]["directly_related_user_types"]:
        user_type.pop("wildcard")
    assert digest(without_wildcard) != digest(MODEL)


def test_normalized_ignores_what_openfga_adds_and_sees_what_changes():
    echoed = copy.deepcopy(MODEL)
    echoed["id"] = "01JABCDEFGHJKMNPQRSTVWXYZ0"
    echoed["conditions"] = {}
    for definition in echoed["type_definitions"]:
        definition.setdefault("metadata", None)
        for relation in (definition.get("metadata") or {}).get("relations", {}).values():
            relation["module"] = ""
            for user_type in relation["directly_related_user_types"]:
                user_type.setdefault("relation", "")
                user_type["condition"] = ""
    assert normalized(echoed) == normalized(MODEL)
    assert normalized(_snake_keys(echoed)) == normalized(MODEL)  # how the SDK's models read it back
    assert digest(echoed) == digest(MODEL)
    changed = copy.deepcopy(MODEL)
    TYPES_ = {t["type"]: t for t in changed["type_definitions"]}
    TYPES_["table"]["relations"]["can_drop"] = {"computedUserset": {"relation": "ownership"}}
    assert digest(changed) != digest(MODEL)
    # {"this": {}} is meaningful: dropping it is a change
    without_direct = copy.deepcopy(MODEL)
    {t["type"]: t for t in without_direct["type_definitions"]}["table"]["relations"]["select"]["union"]["child"].pop(0)
    assert digest(without_direct) != digest(MODEL)


def _snake_keys(value):
    import re

    if isinstance(value, dict):
        return {re.sub(r"(?<!^)([A-Z])", r"_\1", k).lower(): _snake_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_snake_keys(v) for v in value]
    return value


def test_object_names_escape_what_openfga_ids_cannot_hold():
    assert user("oidc~6a1f-22") == "user:oidc~6a1f-22"
    assert user("oidc~alice@example.com") == "user:oidc~alice@example.com"
    tricky = "oidc~a:b#c d*e%f"
    name = user(tricky)
    assert not any(c in name.partition(":")[2] for c in ":# *")
    assert principal_of(name) == tricky
    assert user("oidc~a:b") != user("oidc~a%3Ab")
    assert role_members("r1") == "role:r1#assignee"
    assert id_of(role_members("r1")) == "r1"
    with pytest.raises(ValueError):
        obj("bucket", "x")
    with pytest.raises(ValueError):
        user("")


def test_hierarchy_tuples_link_both_ways_where_the_model_looks_both_ways():
    assert hierarchy("table:t", "namespace:n") == [RelationTuple("namespace:n", "parent", "table:t"),
                                                    RelationTuple("table:t", "child", "namespace:n")]
    assert hierarchy("namespace:c", "namespace:p") == [RelationTuple("namespace:p", "parent", "namespace:c"),
                                                        RelationTuple("namespace:c", "child", "namespace:p")]
    assert hierarchy("namespace:n", "warehouse:w") == [RelationTuple("warehouse:w", "parent", "namespace:n"),
                                                       RelationTuple("namespace:n", "namespace", "warehouse:w")]
    assert hierarchy("warehouse:w", "project:p") == [RelationTuple("project:p", "project", "warehouse:w"),
                                                     RelationTuple("warehouse:w", "warehouse", "project:p")]
    assert hierarchy("project:p", "server:s") == [RelationTuple("server:s", "server", "project:p")]
    for child, parent in (("table:t", "warehouse:w"), ("warehouse:w", "namespace:n"), ("view:v", "table:t")):
        with pytest.raises(ValueError):
            hierarchy(child, parent)
    # every link tuple is one the model accepts: its relation assignable on the object's type with the user's type
    for child, parent in (("table:t", "namespace:n"), ("view:v", "namespace:n"), ("namespace:c", "namespace:p"),
                          ("namespace:n", "warehouse:w"), ("warehouse:w", "project:p"), ("project:p", "server:s")):
        for t in hierarchy(child, parent):
            allowed = [d["type"] for d in _direct_types(t.object.partition(":")[0], t.relation)]
            assert t.user.partition(":")[0] in allowed, t


def test_openfga_settings_nest_under_double_underscores(monkeypatch):
    from lakeledger.settings import Settings

    monkeypatch.setenv("LAKELEDGER__AUTHZ_BACKEND", "openfga")
    monkeypatch.setenv("LAKELEDGER__OPENFGA__ENDPOINT", "http://127.0.0.1:8080")
    monkeypatch.setenv("LAKELEDGER__OPENFGA__API_KEY", "k" * 20)
    monkeypatch.setenv("LAKELEDGER__PG_POOL_SIZE", "3")
    settings = Settings()
    assert settings.authz_backend == "openfga"
    assert settings.openfga.endpoint == "http://127.0.0.1:8080"
    assert settings.openfga.store_name == "lakeledger"
    assert settings.openfga.api_key.get_secret_value() == "k" * 20
    assert settings.pg_pool_size == 3
    monkeypatch.delenv("LAKELEDGER__OPENFGA__ENDPOINT")
    with pytest.raises(ValueError, match="LAKELEDGER__OPENFGA__ENDPOINT"):
        Settings()
    monkeypatch.delenv("LAKELEDGER__AUTHZ_BACKEND")
    assert Settings().authz_backend == "allowall"


def test_allow_all_allows_everything_and_keeps_nothing():
    backend = AllowAll()

    async def ask():
        return (await backend.check("user:a", "can_drop", "table:t"),
                await backend.check_many([Check("user:a", "can_read_data", "table:t")] * 3),
                await backend.list_objects("user:a", "can_get_metadata", "warehouse"),
                await backend.read("table:t"))

    assert asyncio.run(ask()) == (True, [True, True, True], EVERYTHING, [])
    assert "table:anything" in EVERYTHING
    backend.write([RelationTuple("user:a", "select", "table:t")])
    assert asyncio.run(backend.read("table:t")) == []
