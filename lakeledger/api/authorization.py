"""Who may do what, asked on the request path: the one place the routes (and loadTable's fast path) go to for a
decision. A route names the action (a ``can_*`` relation of lakeledger/authz/model.py) and the object; this module asks
the authorizer (through the decisions it remembers briefly, lakeledger/authz/decisions.py) and refuses.

403 or 404: an object the caller may not even see (no ``can_get_metadata``, or ``can_read`` for a role) answers
exactly as if it did not exist, with the same error and message, so that names cannot be probed; an object the
caller sees but may not act on is a 403 ``ForbiddenException`` naming the action. Actions on the server (creating
a project, listing every project or user) are 403 when refused: the server always exists.

Under ``allowall`` every method returns at once without asking anything: the catalog without authorization pays one
attribute test per check."""

from collections.abc import Awaitable, Callable, Sequence
from typing import Any
from uuid import UUID

from fastapi import Request

from lakeledger.api.pagination import ANOTHER_LIST, Page, fetch
from lakeledger.api.routers.warehouses import active_warehouse
from lakeledger.authz.authorizer import AllowAll, Check
from lakeledger.authz.objects import RelationTuple, obj, user
from lakeledger.authz.token_roles import TokenRoles
from lakeledger.domain.errors import (
    BadRequest,
    CatalogError,
    Forbidden,
    NoSuchGenericTable,
    NoSuchNamespace,
    NoSuchTable,
    NoSuchView,
    NoSuchWarehouse,
)
from lakeledger.domain.names import dotted
from lakeledger.identity.principal import ANONYMOUS_PRINCIPAL, Principal
from lakeledger.projections.catalog_queries import WarehouseRow

SEE = "can_get_metadata"

# what a caller may do with a table's files, for the storage access a load hands out
READ, WRITE = "read", "write"


def server_object(server_id) -> str:
    """The installation (``LAKELEDGER__SERVER_ID``, the nil UUID by default)."""
    return obj("server", server_id)


def project(project_id) -> str:
    return obj("project", project_id)


def warehouse(warehouse_id) -> str:
    return obj("warehouse", warehouse_id)


def namespace(namespace_id) -> str:
    return obj("namespace", namespace_id)


def table(table_id) -> str:
    return obj("table", table_id)


def view(view_id) -> str:
    return obj("view", view_id)


def tabular(typ: str, tabular_id) -> str:
    return obj(typ, tabular_id)


def role(role_id) -> str:
    return obj("role", role_id)


class Guard:
    """The decisions of one caller."""

    __slots__ = ("authorizer", "off", "principal", "user", "server", "token_roles", "_context")

    def __init__(self, authorizer, principal: Principal, server_id, token_roles: TokenRoles | None = None):
        self.authorizer = authorizer
        self.off = isinstance(authorizer, AllowAll)
        self.principal = principal
        self.user = None if self.off else user(principal.id)
        self.server = None if self.off else server_object(server_id)
        self.token_roles = token_roles
        self._context: tuple[RelationTuple, ...] | None = None

    async def context(self) -> tuple[RelationTuple, ...]:
        """The roles the caller's token names, as contextual tuples; looked up once per request."""
        if self._context is None:
            self._context = await self.token_roles.contextual(self.principal) \
                if self.token_roles is not None and self.principal.roles else ()
        return self._context

    async def allowed(self, checks: Sequence[tuple[str, str]]) -> list[bool]:
        """One answer per (action, object), asked in one batch."""
        if self.off:
            return [True] * len(checks)
        caller = self.user
        assert caller is not None  # set whenever decisions are asked for (authorization on)
        context = await self.context()
        return await self.authorizer.check_many([Check(caller, action, o, context) for action, o in checks])

    async def may(self, action: str, object_: str) -> bool:
        return (await self.allowed([(action, object_)]))[0]

    async def require(self, action: str, object_: str, missing: CatalogError | None = None, see: str = SEE) -> None:
        """Returns if the caller may do ``action`` on ``object_``. Otherwise raises ``missing`` (the error the
        object's absence would give) when the caller may not see it either, or 403 naming the action. Without
        ``missing`` the object's existence is no secret: a refusal is always 403."""
        if self.off:
            return
        if missing is None or action == see:
            if not await self.may(action, object_):
                raise missing if missing is not None else self.forbidden(action, object_)
            return
        can_see, can_act = await self.allowed([(see, object_), (action, object_)])
        if not can_see:
            raise missing
        if not can_act:
            raise self.forbidden(action, object_)

    async def require_any(self, action: str, objects: Sequence[str], missing: CatalogError) -> None:
        """Allowed if ``action`` holds on any of ``objects`` (e.g. a history filtered by an id that may be a table's
        or a view's); ``missing`` when none may be seen."""
        if self.off:
            return
        answers = await self.allowed([(a, o) for o in objects for a in (SEE, action)])
        if any(answers[i + 1] for i in range(0, len(answers), 2)):
            return
        if not any(answers[i] for i in range(0, len(answers), 2)):
            raise missing
        raise self.forbidden(action, objects[0])

    async def require_on_server(self, action: str) -> None:
        if self.off:
            return
        assert self.server is not None  # set whenever decisions are asked for (authorization on)
        if not await self.may(action, self.server):
            raise self.forbidden(action, self.server)

    async def storage_rights(self, table_object: str, missing: Exception) -> str | None:
        """What a load hands out for the table's files (as Lakekeeper): ``WRITE`` with ``can_write_data``, ``READ``
        with ``can_read_data``, None (metadata only) with neither; ``missing`` when the table is not visible."""
        if self.off:
            return WRITE
        can_see, can_read, can_write = await self.allowed(
            [(SEE, table_object), ("can_read_data", table_object), ("can_write_data", table_object)])
        if not can_see:
            raise missing
        return WRITE if can_write else READ if can_read else None

    async def visible(self, objects: Sequence[str], action: str = SEE) -> list[bool]:
        return await self.allowed([(action, o) for o in objects])

    def forbidden(self, action: str, object_: str) -> Forbidden:
        kind, _, ident = object_.partition(":")
        return Forbidden(f"{self.principal.id} may not {action} on {kind} {ident}")


async def guard(request: Request) -> Guard:
    """The caller's decisions (a FastAPI dependency)."""
    ll = request.app.state.lakeledger
    return Guard(ll.authorizer, getattr(request.state, "principal", ANONYMOUS_PRINCIPAL), ll.settings.server_id,
                 getattr(ll, "token_roles", None))


def guard_of_scope(container, scope) -> Guard:
    """The same for plain ASGI code (loadTable's fast path)."""
    principal = scope.get("state", {}).get("principal", ANONYMOUS_PRINCIPAL)
    return Guard(container.authorizer, principal, container.settings.server_id,
                 getattr(container, "token_roles", None))


async def fetch_visible(az: Guard, page: Page, rows: Callable[[Any, int | None], Awaitable[Sequence]],
                        valid_key: Callable[[Any], bool], key: Callable[[Any], Any],
                        objects: Callable[[Sequence], Awaitable[list[str | None]]],
                        action: str = SEE) -> tuple[Sequence[Any], str | None]:
    """``api.pagination.fetch`` of only the rows the caller may see. ``objects(rows)`` names each row's object
    (None: the row left the list meanwhile). Pages stay keyset pages: batches are read on past what is hidden
    until the page is full, and the token is the last served row's key, so the next page starts right after it."""
    if az.off:
        return await fetch(page, rows, valid_key, key)
    if page.size is None:
        found = await rows(None, None)
        return await _keep(az, found, objects, action), None
    if page.after is not None and not valid_key(page.after):
        raise BadRequest(ANOTHER_LIST)
    served: list = []
    after, want = page.after, page.size + 1
    while True:
        batch = await rows(after, want)
        served += await _keep(az, batch, objects, action)
        if len(served) > page.size:
            served = served[:page.size]
            return served, page.token(key(served[-1]))
        if len(batch) < want:
            return served, None
        after = key(batch[-1])


async def _keep(az: Guard, rows: Sequence, objects, action: str) -> list:
    if not rows:
        return []
    named = await objects(rows)
    asked = [(i, o) for i, o in enumerate(named) if o is not None]
    answers = await az.visible([o for _, o in asked], action)
    keep = {i for (i, _), yes in zip(asked, answers, strict=True) if yes}
    return [row for i, row in enumerate(rows) if i in keep]


def as_uuid(value) -> UUID | None:
    try:
        return value if isinstance(value, UUID) else UUID(str(value))
    except ValueError:
        return None


# ---- objects named by a catalog path: looked up only when authorization is on ----------------------------------

def no_warehouse(prefix: str) -> NoSuchWarehouse:
    return NoSuchWarehouse(f"Warehouse does not exist: {prefix}")


_MISSING_TABULAR = {"table": (NoSuchTable, "Table"), "view": (NoSuchView, "View"),
                    "generic-table": (NoSuchGenericTable, "Generic table")}


def no_tabular(typ: str, path: Sequence[str], name: str) -> CatalogError:
    error, word = _MISSING_TABULAR[typ]
    return error(f"{word} does not exist: {dotted([*path, name])}")


def active_lookup(queries, typ: str):
    """The read-model lookup of a live tabular of kind ``typ`` by namespace and name (now, or in the past)."""
    return {"table": queries.active_table, "view": queries.active_view,
            "generic-table": queries.active_generic_table}[typ]


def relation_word(typ: str) -> str:
    """The kind as the namespace's relations name it: can_create_generic_table, can_list_generic_tables."""
    return typ.replace("-", "_")


async def warehouse_action(ll, az: Guard, prefix: str, action: str) -> WarehouseRow | None:
    """``action`` on the warehouse of a catalog prefix (which must exist and be active); its row when it was read."""
    if az.off:
        return None
    wh = await active_warehouse(ll, prefix)
    await az.require(action, warehouse(wh.id), no_warehouse(prefix))
    return wh


async def namespace_action(ll, az: Guard, prefix: str, path: Sequence[str], action: str) -> None:
    """``action`` on the namespace at ``path``; nothing to decide when it does not exist (the service then says
    so, with the same error a hidden one gets)."""
    if az.off:
        return
    wh = await active_warehouse(ll, prefix)
    levels = list(path)
    row = await ll.queries.namespace(wh.id, levels)
    if row is not None:
        await az.require(action, namespace(row.id), NoSuchNamespace(f"Namespace does not exist: {dotted(levels)}"))


async def create_in(ll, az: Guard, prefix: str, parent: Sequence[str], action: str) -> None:
    """``action`` (can_create_namespace/table/view) in the namespace ``parent``, or in the warehouse for []."""
    if az.off:
        return
    if parent:
        await namespace_action(ll, az, prefix, parent, action)
    else:
        await warehouse_action(ll, az, prefix, action)


async def tabular_action(ll, az: Guard, prefix: str, path: Sequence[str], name: str, typ: str, action: str,
                         absent: str | None = None) -> None:
    """``action`` on the live table or view ``path.name``. When there is none: ``absent`` (a relation on the
    namespace, for a commit that creates a staged table) if given, else nothing to decide (the service says it is
    missing)."""
    if az.off:
        return
    warehouse_id = as_uuid(prefix)
    if warehouse_id is None:
        return
    row = await active_lookup(ll.queries, typ)(warehouse_id, list(path), name)
    if row is not None:
        await az.require(action, tabular(typ, row[0]), no_tabular(typ, path, name))
    elif absent is not None:
        await namespace_action(ll, az, prefix, path, absent)


async def rename(ll, az: Guard, prefix: str, typ: str, body) -> None:
    """A rename (``RenameTableRequest``) needs can_rename on the table or view, and can_create_<typ> in the
    destination namespace when it moves to another one."""
    if az.off:
        return
    source, destination = body.source, body.destination
    await tabular_action(ll, az, prefix, source.namespace, source.name, typ, "can_rename")
    if list(destination.namespace) != list(source.namespace):
        await namespace_action(ll, az, prefix, destination.namespace, f"can_create_{relation_word(typ)}")
