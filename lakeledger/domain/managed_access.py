"""Managed access, a switch on a warehouse or namespace (Lakekeeper's): below it, owning an object no longer gives
the right to grant on it; only grant authority does (lakeledger/authz/model.py)."""

from lakeledger.domain.errors import BadRequest


def managed_access_changes(current: bool, wanted: object) -> bool:
    """Whether setting managed access to ``wanted`` changes anything (the same flag again records nothing)."""
    if not isinstance(wanted, bool):
        raise BadRequest("managed-access must be true or false")
    return wanted != current
