"""What the API and the grant projection ask of an authorization backend, and the backend that allows everything
(no identity provider configured).

Decisions (check, check_many, list_objects, read) are coroutines: the API asks them on its event loop, on the
request path of every call, where a thread-pool hop per check would cost more than the check. Tuple writes are
plain calls: the grant projection that makes them runs in worker threads like every projection, and ``migrate``
is synchronous."""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from lakeledger.authz.objects import RelationTuple


@dataclass(frozen=True)
class Check:
    user: str
    relation: str
    object: str
    # tuples true for this question only (the roles a caller's token names, lakeledger/authz/token_roles.py): OpenFGA's
    # contextual tuples, never written
    context: tuple[RelationTuple, ...] = ()


class AuthorizationUnavailable(RuntimeError):
    """The backend could not answer (down, unreachable, store or model missing). The API answers 503: refusing
    for lack of an answer would read as a decision."""


class _Everything:
    """What ``list_objects`` answers when every object is visible: contains anything."""

    def __contains__(self, item) -> bool:
        return True

    def __repr__(self) -> str:
        return "EVERYTHING"


EVERYTHING = _Everything()


class Authorizer(Protocol):
    async def check(self, user: str, relation: str, object: str) -> bool: ...

    async def check_many(self, checks: Sequence[Check]) -> list[bool]:
        """One answer per check, in order, asked in one round trip where the backend can (OpenFGA batch check)."""
        ...

    async def list_objects(self, user: str, relation: str, type_name: str):
        """The objects (``type:id``) of ``type_name`` on which ``user`` has ``relation``: a set, or ``EVERYTHING``
        (test ``result is EVERYTHING`` before filtering a query by it)."""
        ...

    async def read(self, object: str, relation: str | None = None) -> list[RelationTuple]:
        """The tuples written on ``object`` (all relations, or one): who was granted what there, directly."""
        ...

    def write(self, writes: Iterable[RelationTuple] = (), deletes: Iterable[RelationTuple] = ()) -> None:
        """Writes and deletes tuples. Idempotent: writing one that exists or deleting one that does not is no
        error, so a projection can apply an event twice (after a crash) or replay the whole log."""
        ...

    def close(self) -> None: ...

    async def aclose(self) -> None:
        """Closes what the decisions opened on the running event loop."""
        ...


class AllowAll:
    """Every check passes and no tuple is kept: the catalog as it is without authentication."""

    async def check(self, user: str, relation: str, object: str) -> bool:
        return True

    async def check_many(self, checks: Sequence[Check]) -> list[bool]:
        return [True] * len(checks)

    async def list_objects(self, user: str, relation: str, type_name: str):
        return EVERYTHING

    async def read(self, object: str, relation: str | None = None) -> list[RelationTuple]:
        return []

    def write(self, writes: Iterable[RelationTuple] = (), deletes: Iterable[RelationTuple] = ()) -> None:
        return None

    def close(self) -> None:
        return None

    async def aclose(self) -> None:
        return None
