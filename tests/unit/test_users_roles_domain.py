"""The User and Role aggregates alone: what they accept, what they record, and what they refuse."""

import uuid

import pytest

from lakeledger.domain.errors import AlreadyExists, BadRequest
from lakeledger.domain.provenance import Provenance
from lakeledger.domain.role import NoSuchRole, Role, check_member
from lakeledger.domain.user import FIRST_REQUEST, NoSuchUser, User, check_user_id, user_aggregate_id

BY = Provenance("oidc~admin", "req-1")


def _types(aggregate) -> list[str]:
    return [type(e).__name__ for e in aggregate.collect_events()]


def test_a_user_id_is_idp_tilde_subject():
    assert check_user_id("oidc~123") == "oidc~123"
    assert check_user_id("kubernetes~a~b") == "kubernetes~a~b"  # the first ~ separates
    for bad in ("oidc", "~123", "oidc~", "oidc~" + "x" * 128, "oidc~a\tb", 7):
        with pytest.raises(BadRequest):
            check_user_id(bad)


def test_one_principal_is_one_aggregate_for_ever():
    assert user_aggregate_id("oidc~1") == user_aggregate_id("oidc~1") != user_aggregate_id("oidc~2")
    user = User.create("oidc~1", "Ana", "", "human", FIRST_REQUEST, BY)
    assert user.id == user_aggregate_id("oidc~1") and user.email is None  # an empty email is none
    assert user.update("Ana", None, "human", "update-endpoint", BY) is False  # nothing changed, nothing recorded
    user.delete(BY)
    with pytest.raises(NoSuchUser):
        user.update("Ana B", None, "human", "update-endpoint", BY)
    user.recreate("Ana C", None, "application", FIRST_REQUEST, BY)
    with pytest.raises(AlreadyExists):
        user.recreate("Ana D", None, "human", FIRST_REQUEST, BY)
    assert _types(user) == ["Created", "Deleted", "Recreated"]
    assert (user.name, user.user_type, user.deleted) == ("Ana C", "application", False)


def test_user_events_carry_who_and_under_which_request():
    [created] = User.create("oidc~2", "Bo", "bo@x.org", "application", "create-endpoint", BY).collect_events()
    assert (created.actor, created.request_id, created.user_id, created.email) == \
        ("oidc~admin", "req-1", "oidc~2", "bo@x.org")


def test_a_role_records_each_membership_change_once():
    role = Role.create(uuid.uuid4(), uuid.UUID(int=0), "analysts", None, None, None, BY)
    assert (role.provider_id, role.source_id, role.ident) == ("lakekeeper", str(role.id), f"lakekeeper~{role.id}")
    other = str(uuid.uuid4())
    assert role.add_member("user", "oidc~1", BY) and not role.add_member("user", "oidc~1", BY)
    assert role.add_member("role", other, BY)
    assert role.remove_member("user", "oidc~1", BY) and not role.remove_member("user", "oidc~1", BY)
    with pytest.raises(BadRequest, match="itself"):
        role.add_member("role", str(role.id), BY)
    role.delete(BY)  # the remaining member leaves first, then the role goes
    assert _types(role) == ["Created", "MemberAdded", "MemberAdded", "MemberRemoved", "MemberRemoved", "Deleted"]
    with pytest.raises(NoSuchRole):
        role.add_member("user", "oidc~2", BY)


def test_role_input_is_checked():
    project = uuid.UUID(int=0)
    for name, provider, source in (("", None, None), ("x", "oidc", None), ("x", None, "s"), ("x", "a~b", "s"),
                                   ("x\x00", None, None)):
        with pytest.raises(BadRequest):
            Role.create(uuid.uuid4(), project, name, None, provider, source, BY)
    assert Role.create(uuid.uuid4(), project, "x", "line one\nline two", "oidc", "g1", BY).ident == "oidc~g1"
    assert check_member({"type": "role", "id": str(uuid.UUID(int=5)).upper()}) == ("role", str(uuid.UUID(int=5)))
    for bad in ({"type": "group", "id": "x"}, {"type": "user", "id": "x"}, {"type": "role", "id": "x"},
                {"type": "user"}, {"type": "user", "id": "oidc~1", "more": 1}, ["user", "oidc~1"]):
        with pytest.raises(BadRequest):
            check_member(bad)
