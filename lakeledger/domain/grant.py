"""A grant: one grantee (a user, or every member of a role) holding one relation on one object.

One aggregate per (object, relation, grantee), its id derived from the three, so that two requests granting the
same thing at the same moment append to one aggregate at one version and exactly one wins, and a revoke finds
its grant without a lookup. Its life is a sequence of ``Added`` and ``Removed``: granted, revoked, granted again.

Either event may come first. ``Added`` usually does; ``Removed`` does when what is revoked was never granted by a
grant event: the ownership Lakekeeper (and we) give a principal over what it creates is recorded by the creation
event itself (lakeledger/projections/authz_tuples.py), and revoking it is this aggregate's first event.

Objects are named as OpenFGA names them (``table:<uuid>``, lakeledger/authz/objects.py), grantees as ``user:<id>`` or
``role:<uuid>#assignee``: the history and the access-history read model show exactly what the tuple projection
writes."""

from uuid import UUID, uuid5

from eventsourcing.utils import get_topic

from lakeledger.domain.base import CatalogAggregate, OpensOrContinues
from lakeledger.domain.provenance import Provenance

_GRANTS = UUID("6f1d2c84-3b5a-5e09-a7c4-9d2e8b1f0a37")


def grant_aggregate_id(object_: str, relation: str, grantee: str) -> UUID:
    return uuid5(_GRANTS, f"{object_}\n{relation}\n{grantee}")


class Grant(CatalogAggregate):
    class _Either(OpensOrContinues):
        """An event that may open the aggregate's history or continue it."""

        object: str
        relation: str
        grantee: str

    class Added(_Either):
        def apply(self, aggregate: "Grant") -> None:
            aggregate.held = True

    class Removed(_Either):
        def apply(self, aggregate: "Grant") -> None:
            aggregate.held = False

    def __init__(self, object: str, relation: str, grantee: str, actor: str, request_id: str):
        self.object, self.relation, self.grantee = object, relation, grantee
        self.held = False

    @classmethod
    def add(cls, grant: "Grant | None", object_: str, relation: str, grantee: str, by: Provenance) -> "Grant | None":
        """The grant, with an ``Added`` pending; None when it is held already (granting again records nothing)."""
        return cls._change(cls.Added, grant, object_, relation, grantee, by, unless_held=True)

    @classmethod
    def remove(cls, grant: "Grant | None", object_: str, relation: str, grantee: str, by: Provenance,
               implicit: bool = False) -> "Grant | None":
        """The grant, with a ``Removed`` pending; None when there is nothing to revoke. ``implicit``: the relation
        is held without a grant event (a creator's ownership), so a revoke is recorded even with no grant."""
        if grant is None and not implicit:
            return None
        return cls._change(cls.Removed, grant, object_, relation, grantee, by, unless_held=False)

    @classmethod
    def _change(cls, event_class: type[_Either], grant: "Grant | None", object_: str, relation: str, grantee: str,
                by: Provenance, unless_held: bool) -> "Grant | None":
        fields = {"object": object_, "relation": relation, "grantee": grantee, "actor": by.actor,
                  "request_id": by.request_id}
        if grant is None:
            return cls._create(event_class, id=grant_aggregate_id(object_, relation, grantee), **fields)
        if grant.held == unless_held:
            return None
        grant.trigger_event(event_class, originator_topic=get_topic(cls), **fields)
        return grant
