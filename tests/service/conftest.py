"""The service tier: the catalog's commands run in-process, through the composition root's services, on the test
session's real Postgres. No HTTP and no mocks: what a test asserts comes back from the services, the event log and
the read-model queries the API answers from.

Isolation is a warehouse per test. Every name a command claims lives under its warehouse (namespaces under the
warehouse or their parent, tables and views under their namespace), so a fresh warehouse is a fresh catalog; the
tier's database is its own and its tests run one at a time, so the log's head moves only with what a test appends.
Measured on the session's embedded Postgres: a warehouse costs 30-70 ms, a database of its own per test (CREATE
DATABASE from a migrated template, a container on it, DROP DATABASE) 0.4 to 1.9 s.

Races are made, not faked: ``interleave`` runs another writer's command (``rival``, a second composition root on the
same database, as another API process would be) in the window between a command's reads and its append, so the
append meets a real conflict or a real change of state."""

import asyncio
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from psycopg_pool import AsyncConnectionPool
from support import SCHEMA, VIEW_VERSION, create_database

from lakeledger.api.models import CreateTableRequest, CreateViewRequest
from lakeledger.bootstrap import Container, migrate
from lakeledger.domain.project import DEFAULT_PROJECT_ID
from lakeledger.domain.provenance import Provenance
from lakeledger.eventstore.log import StoredNotification
from lakeledger.projections.catalog_queries import AsyncCatalogQueries
from lakeledger.services.tables import TableChange, TableState
from lakeledger.services.unit_of_work import Ledger
from lakeledger.services.views import ViewState
from lakeledger.settings import Settings


@pytest.fixture(scope="session")
def service_database(pg_url: str, data_dir: Path) -> str:
    url = create_database(pg_url, f"service_{uuid.uuid4().hex[:12]}")
    migrate(Settings(pg_url=url, data_dir=data_dir), url)
    return url


# per module, not per session: their pools' connections are given back before the API tests' servers need them
@pytest.fixture(scope="module")
def services(service_database: str, data_dir: Path) -> Iterator[Container]:
    """The composition root under test."""
    container = Container(Settings(pg_url=service_database, data_dir=data_dir))
    container.start()  # the default project, which the tests' warehouses belong to
    yield container
    container.close()


@pytest.fixture(scope="module")
def rival(service_database: str, data_dir: Path, services: Container) -> Iterator[Container]:
    """Another writer on the same log, with pools and an aggregate cache of its own: another API process."""
    container = Container(Settings(pg_url=service_database, data_dir=data_dir))
    yield container
    container.close()


class ReadModel:
    """The read-model queries the API answers loads and lists from (AsyncCatalogQueries), on a loop of their own."""

    def __init__(self, conninfo: str):
        self._runner = asyncio.Runner()
        self._pool = AsyncConnectionPool(conninfo, min_size=1, max_size=2, kwargs={"autocommit": True}, open=False)
        self._runner.run(self._pool.open(wait=True))
        self.queries = AsyncCatalogQueries(self._pool)

    def run(self, question: Any) -> Any:
        return self._runner.run(question)

    def close(self) -> None:
        self._runner.run(self._pool.close())
        self._runner.close()


@pytest.fixture(scope="module")
def read_model(services: Container) -> Iterator[ReadModel]:
    model = ReadModel(services.conninfo)
    yield model
    model.close()


@dataclass
class Catalog:
    """A fresh warehouse on the tier's database, and shorthands for what tests set up in it."""

    services: Container
    rival: Container
    read_model: ReadModel
    warehouse_id: str
    warehouse_name: str
    location: Path
    by: Provenance = field(default_factory=lambda: Provenance("service-tests", "setup"))

    # -- the log --------------------------------------------------------------------------------

    def head(self) -> int:
        return self.services.log.head()

    def events_after(self, position: int) -> list[StoredNotification]:
        return self.services.log.read(position, 10_000)

    def kinds_after(self, position: int) -> list[str]:
        """The appended events' class names (``Table.Created``), in log order."""
        return [type(n.event).__qualname__ for n in self.events_after(position)]

    # -- setting up ------------------------------------------------------------------------------

    def namespace(self, *path: str, on: Container | None = None) -> UUID:
        return (on or self.services).namespaces.create(self.warehouse_id, list(path), {}, self.by).id

    def namespace_id(self, *path: str) -> UUID:
        row = self.read_model.run(self.read_model.queries.namespace(UUID(self.warehouse_id), list(path)))
        assert row is not None, path
        return row.id

    def table(self, namespace: str, name: str, on: Container | None = None) -> TableState:
        request = CreateTableRequest.model_validate({"name": name, "schema": SCHEMA})
        return (on or self.services).tables.create(self.warehouse_id, [namespace], request,
                                                   {"name": name, "schema": SCHEMA}, self.by)

    def view(self, namespace: str, name: str, on: Container | None = None) -> ViewState:
        body = {"name": name, "schema": SCHEMA, "view-version": {**VIEW_VERSION, "default-namespace": [namespace]}}
        return (on or self.services).views.create(self.warehouse_id, [namespace],
                                                  CreateViewRequest.model_validate(body), body, self.by)

    def commit(self, namespace: str, name: str, updates: list, requirements: list | None = None,
               on: Container | None = None, by: Provenance | None = None) -> TableState:
        [state] = (on or self.services).tables.commit(
            self.warehouse_id, [TableChange((namespace,), name, requirements or [], updates)], by or self.by)
        return state

    # -- the read model ------------------------------------------------------------------------

    def loaded_table(self, namespace: str, name: str) -> tuple[UUID, str] | None:
        """(id, metadata location) of the live table as loadTable finds it."""
        row = self.read_model.run(self.read_model.queries.active_table(UUID(self.warehouse_id), [namespace], name))
        return (row.id, row.metadata_location) if row else None

    def loaded_view(self, namespace: str, name: str) -> tuple[UUID, str] | None:
        row = self.read_model.run(self.read_model.queries.active_view(UUID(self.warehouse_id), [namespace], name))
        return (row.id, row.metadata_location) if row else None

    def listed(self, namespace: str, typ: str) -> list[str]:
        """The names listTables (``table``) or listViews (``view``) shows in a namespace."""
        row = self.read_model.run(self.read_model.queries.namespace(UUID(self.warehouse_id), [namespace]))
        if row is None:
            return []
        return self.read_model.run(self.read_model.queries.tabulars(row.id, typ, None, 1000))

    def warehouse_listed(self) -> bool:
        return self.read_model.run(self.read_model.queries.warehouse(UUID(self.warehouse_id))) is not None

    def namespace_listed(self, *path: str) -> bool:
        return self.read_model.run(self.read_model.queries.namespace(UUID(self.warehouse_id), list(path))) is not None

    def metadata_files(self) -> list[Path]:
        return sorted(self.location.rglob("*.metadata.json"))


@pytest.fixture
def catalog(services: Container, rival: Container, read_model: ReadModel, tmp_path: Path) -> Catalog:
    location = tmp_path / "warehouse"
    name = f"svc-{uuid.uuid4().hex[:12]}"
    warehouse_id = services.management.create_warehouse(
        DEFAULT_PROJECT_ID, name, {"type": "file", "location": f"file://{location}"}, None, None,
        Provenance("service-tests", "warehouse"))
    return Catalog(services, rival, read_model, str(warehouse_id), name, location)


@dataclass
class Interleaving:
    """How many appends the interleaved ledger tried: one per run of the command that got as far as its append."""

    appends: int = 0


@pytest.fixture
def interleave(monkeypatch: pytest.MonkeyPatch) -> Callable[..., Interleaving]:
    """``interleave(ledger, move, times=1)``: runs ``move()`` (another writer's command) just before each of the
    ledger's next ``times`` appends, after the command has read what it builds on; the append itself is the
    ledger's own. ``times=None``: before every append."""
    def arrange(ledger: Ledger, move: Callable[[], object], times: int | None = 1) -> Interleaving:
        seen = Interleaving()
        append = ledger.append

        def interleaved(*aggregates: Any, **options: Any) -> int | None:
            seen.appends += 1
            if times is None or seen.appends <= times:
                move()
            return append(*aggregates, **options)

        monkeypatch.setattr(ledger, "append", interleaved)
        return seen
    return arrange

