"""Roles a caller holds because its token says so: the values of its provider's roles claim
(``LAKELEDGER__OPENID_ROLES_CLAIM``, ``LAKELEDGER__OPENID_PROVIDERS__<ID>__ROLES_CLAIM``) name roles as Lakekeeper
does, by ident: the value ``analysts`` in a token of provider ``okta`` is the role whose provider-id is ``okta`` and
source-id ``analysts``, in each project that has one (create it with those two fields, then grant it as any role).

The membership holds for the request only: the authorizer is asked with it as OpenFGA contextual tuples
(``user:<id>`` ``assignee`` ``role:<id>``), nothing is written and nothing enters the log, since a claim is not a
change to the catalog. Another token with other groups has other rights at once; the actor of what it changes is
the user, as always. The matching roles are looked up once per ``ttl`` (the authorization cache's seconds) for the
same set of claimed roles."""

import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from uuid import UUID

from lakeledger.authz.objects import RelationTuple, obj, user
from lakeledger.identity.principal import Principal

# role ids by (provider, claimed roles); few distinct sets exist (one per group combination)
MAX_ENTRIES = 4096
# OpenFGA's API takes at most this many contextual tuples with a check
MAX_CONTEXTUAL_TUPLES = 100

logger = logging.getLogger(__name__)


class TokenRoles:
    def __init__(self, roles_of_ident: Callable[[str, list[str]], Awaitable[list[UUID]]], ttl: float,
                 clock=time.monotonic):
        self.roles_of_ident = roles_of_ident
        self.ttl = ttl
        self._clock = clock
        self._found: OrderedDict[tuple[str, tuple[str, ...]], tuple[float, tuple[UUID, ...]]] = OrderedDict()

    async def role_ids(self, principal: Principal) -> tuple[UUID, ...]:
        if not principal.roles or principal.provider is None:
            return ()
        key, now = (principal.provider, principal.roles), self._clock()
        found = self._found.get(key)
        if found is not None and found[0] > now:
            return found[1]
        ids = tuple(await self.roles_of_ident(principal.provider, list(principal.roles)))
        if len(ids) > MAX_CONTEXTUAL_TUPLES:
            logger.warning("%s's token names %d roles; the first %d (by id) are held", principal.id, len(ids),
                           MAX_CONTEXTUAL_TUPLES)
            ids = ids[:MAX_CONTEXTUAL_TUPLES]
        if self.ttl > 0:
            self._found[key] = (now + self.ttl, ids)
            self._found.move_to_end(key)
            while len(self._found) > MAX_ENTRIES:
                self._found.popitem(last=False)
        return ids

    async def contextual(self, principal: Principal) -> tuple[RelationTuple, ...]:
        """What the authorizer is told with each of this caller's questions."""
        member = user(principal.id)
        return tuple(RelationTuple(member, "assignee", obj("role", role_id))
                     for role_id in await self.role_ids(principal))
