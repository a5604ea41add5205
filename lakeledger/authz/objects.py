"""How catalog things are named in OpenFGA (``type:id``), and the tuples that place an object in the hierarchy
the model inherits along (lakeledger/authz/model.py). Pure: no I/O."""

from dataclasses import dataclass
from urllib.parse import quote, unquote

TYPES = ("user", "role", "server", "project", "warehouse", "namespace", "table", "view", "generic-table",
         "tag-definition")


@dataclass(frozen=True)
class RelationTuple:
    """``user`` has ``relation`` on ``object``: ``user:oidc~alice`` ``select`` ``table:<uuid>``, or
    ``role:<uuid>#assignee`` ``modify`` ``namespace:<uuid>``, or ``namespace:<uuid>`` ``parent`` ``table:<uuid>``."""

    user: str
    relation: str
    object: str


def _id(value) -> str:
    # OpenFGA ids may not hold ':', '#', '*' (the wildcard) or white space; an OIDC subject may. Percent-encoding
    # keeps the mapping one-to-one and leaves the usual ids (UUIDs, oidc~<uuid>) as they are.
    text = str(value)
    if not text:
        raise ValueError("an OpenFGA object id cannot be empty")
    return quote(text, safe="~@|!$&'()+,;=/.-_")


def obj(type_name: str, id_) -> str:
    if type_name not in TYPES:
        raise ValueError(f"unknown OpenFGA type {type_name!r}")
    return f"{type_name}:{_id(id_)}"


def user(principal_id: str) -> str:
    """The user a principal is in tuples (its id is ``oidc~<subject>`` as the log records it)."""
    return obj("user", principal_id)


def role_members(role_id) -> str:
    """Everyone who holds a role, as the grantee of a tuple (``role:<id>#assignee``)."""
    return f"{obj('role', role_id)}#assignee"


def principal_of(user_object: str) -> str:
    """The principal id back from ``user:<id>``."""
    type_name, _, id_ = user_object.partition(":")
    if type_name != "user":
        raise ValueError(f"not a user: {user_object!r}")
    return unquote(id_)


def type_of(object_: str) -> str:
    return object_.partition(":")[0]


def id_of(object_: str) -> str:
    return unquote(object_.partition(":")[2].partition("#")[0])


# (child type, parent type) -> tuples linking them; the model reads privileges down through the first kind
# (parent/project/server) and visibility up through the second (child/namespace/warehouse)
_LINKS = {
    ("project", "server"): (("parent", "server", "child"),),
    ("warehouse", "project"): (("parent", "project", "child"), ("child", "warehouse", "parent")),
    ("namespace", "warehouse"): (("parent", "parent", "child"), ("child", "namespace", "parent")),
    ("namespace", "namespace"): (("parent", "parent", "child"), ("child", "child", "parent")),
    ("table", "namespace"): (("parent", "parent", "child"), ("child", "child", "parent")),
    ("view", "namespace"): (("parent", "parent", "child"), ("child", "child", "parent")),
    ("generic-table", "namespace"): (("parent", "parent", "child"), ("child", "child", "parent")),
}


def hierarchy(child: str, parent: str) -> list[RelationTuple]:
    """The tuples that put ``child`` (e.g. ``table:<id>``) under ``parent`` (``namespace:<id>``): written when the
    child is created or moved there, deleted when it leaves."""
    links = _LINKS.get((type_of(child), type_of(parent)))
    if links is None:
        raise ValueError(f"a {type_of(child)} cannot be placed under a {type_of(parent)}")
    ends = {"child": child, "parent": parent}
    return [RelationTuple(ends[who], relation, ends[on]) for who, relation, on in links]
