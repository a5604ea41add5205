"""The Credential Access Boundary that confines a vended GCS token to one table's location.

A downscoped token keeps at most the permissions of the roles named here, and only on resources for which the
boundary's CEL condition holds: objects (and managed folders) whose names begin with the table's key prefix and a
trailing slash, and listings whose prefix begins with it. The trailing slash matters: without it a table at
``.../t`` would reach ``.../t2``. Keys are written into CEL single-quoted literals, so quotes and backslashes are
escaped; a key with a control character is refused (no location the catalog accepts has one)."""

from lakeledger.domain.errors import BadRequest

READ_ROLES = ("inRole:roles/storage.objectViewer",)
# objectUser: create, overwrite and delete objects as well as read them; engines delete files they wrote when a
# commit fails, and maintenance deletes old ones
WRITE_ROLES = ("inRole:roles/storage.objectUser",)

_CEL_ESCAPES = {"\\": "\\\\", "'": "\\'", '"': '\\"'}


def cel_literal(text: str) -> str:
    """``text`` inside a CEL single-quoted string literal."""
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in text):
        raise BadRequest(f"Location key {text!r} contains a control character: a GCS token could not be confined "
                         "to it")
    return "".join(_CEL_ESCAPES.get(c, c) for c in text)


def bucket_resource(bucket: str) -> str:
    return f"//storage.googleapis.com/projects/_/buckets/{bucket}"


def table_condition(bucket: str, key_prefix: str) -> str:
    """The CEL expression that holds for the table's objects and for listings inside the table, nothing else."""
    folder = key_prefix.strip("/") + "/"
    name, where = cel_literal(folder), cel_literal(bucket)
    return (f"resource.name.startsWith('projects/_/buckets/{where}/objects/{name}')"
            f" || resource.name.startsWith('projects/_/buckets/{where}/managedFolders/{name}')"
            f" || api.getAttribute('storage.googleapis.com/objectListPrefix', '').startsWith('{name}')")


def table_roles(write: bool) -> tuple[str, ...]:
    return WRITE_ROLES if write else READ_ROLES
