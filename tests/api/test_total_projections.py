"""Every read model applies every event, whatever its strings and numbers hold (lakeledger/projections/storable.py).

Hypothesis makes events of every event class of lakeledger/domain/ (found by walking the classes, so a new one is
covered the day it is written) with NUL characters, unpaired surrogates, megabyte-long strings, integers far beyond 64
bits, NaN and infinities and nesting hundreds of levels deep, and appends them to a real event log in Postgres through
the event store's recorder, as a database upgraded from an older version may hold them (nothing the API refuses today is
refused here). Every read model's writer then follows the log (the runners' batch writers), and a rebuild replays it
into new tables: none may fail, and the rebuilt read models must equal the live ones row for row."""

import dataclasses
import importlib
import itertools
import json
import os
import pkgutil
import types
import typing
from datetime import UTC, datetime
from uuid import UUID, uuid4

import psycopg
import pytest
from eventsourcing.domain import Aggregate, DomainEvent
from eventsourcing.utils import resolve_topic
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from psycopg_pool import ConnectionPool

import lakeledger.domain
from lakeledger.bootstrap import migrate
from lakeledger.domain.table import Table
from lakeledger.eventstore.log import EventLog
from lakeledger.eventstore.settings import PostgresSettings
from lakeledger.projections.access_history import AccessHistoryProjection
from lakeledger.projections.authz_tuples import AuthzTuplesProjection
from lakeledger.projections.catalog import CatalogProjection
from lakeledger.projections.catalog_versions import CatalogVersionsProjection
from lakeledger.projections.driver import ProjectionDriver
from lakeledger.projections.expiry_schedule import ExpirySchedule
from lakeledger.projections.history import HistoryProjection
from lakeledger.projections.maintenance_policies import MaintenancePoliciesProjection
from lakeledger.projections.metrics_reports import MetricsReportsProjection
from lakeledger.projections.rebuild import Rebuild
from lakeledger.projections.tags import TagsProjection
from lakeledger.projections.tasks import TasksProjection
from lakeledger.projections.users_roles import UsersRolesProjection
from lakeledger.settings import Settings

SERVER_ID = UUID("00000000-0000-4000-8000-000000000027")
# every read model the catalog has: the OpenFGA tuples as their mirror table (what writing OpenFGA adds is the
# TupleProjectionRunner's, tested with OpenFGA in tests/e2e)
PROJECTIONS = (CatalogProjection(), HistoryProjection(), ExpirySchedule(), UsersRolesProjection(),
               AccessHistoryProjection(SERVER_ID), CatalogVersionsProjection(), AuthzTuplesProjection(SERVER_ID),
               TagsProjection(), MetricsReportsProjection(per_table=2), MaintenancePoliciesProjection(),
               TasksProjection())
SURROGATE_KEYS = {"ll_access_ranges": {"id"}}  # numbered by a sequence that keeps counting across rebuilds


def event_classes() -> list[type]:
    """Every event class the domain defines, as the log names them (one class per topic)."""
    for module in pkgutil.iter_modules(lakeledger.domain.__path__):
        importlib.import_module(f"lakeledger.domain.{module.name}")
    found, pending = {}, [DomainEvent]
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        # an aggregate's own events (``Aggregate.Event``); a shared base such as base.OpensOrContinues is never recorded
        if cls.__module__.startswith("lakeledger.domain.") and dataclasses.is_dataclass(cls) \
                and "." in cls.__qualname__:
            topic = _topic(cls)
            if resolve_topic(topic) is cls:
                found[topic] = cls
    return [found[topic] for topic in sorted(found)]


def _topic(cls: type) -> str:
    """How the log names a class (eventsourcing's get_topic would refuse, and remember, the classes it does not)."""
    return f"{cls.__module__}:{cls.__qualname__}"


EVENT_CLASSES = event_classes()

# ---- hostile values -------------------------------------------------------------------------------------------

_NASTY = ["\x00", "\ud800", "\udfff", "\udc00\ud800", "a\x00b", "\ufffd", "\\u0000", '"', "\\", "{", "}", ",",
          "NaN", "Infinity", "\U0001F600", "e\u0301", "\u2028", "\t\n\r", "%", "*", "#", ":", "'"]
# small pieces: every field of every event class is drawn in each example, and Hypothesis drops examples that draw
# too much
_piece = st.one_of(st.sampled_from(_NASTY), st.text(max_size=4),
                   st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF, categories=None),
                           max_size=3))
_megabyte = st.text(min_size=1, max_size=6).map(lambda s: (s * (2**20 // len(s) + 1))[:2**20])
hostile_text = st.lists(_piece, max_size=3).map("".join)
hostile_numbers = st.one_of(st.integers(), st.sampled_from([10**30, -(10**30), 2**63, -(2**63) - 1, 2**64, 10**300]),
                            st.floats(allow_nan=True, allow_infinity=True))
_scalars = st.one_of(st.none(), st.booleans(), hostile_numbers, hostile_text)
json_values = st.recursive(_scalars, lambda inner: st.one_of(st.lists(inner, max_size=2),
                                                             st.dictionaries(hostile_text, inner, max_size=2)),
                           max_leaves=4)


def _nested(depth: int, leaf: object, in_dict: bool) -> object:
    for level in range(depth):
        leaf = {"\x00" if level % 7 == 0 else "k": leaf} if in_dict else [leaf]
    return leaf


# deeper than orjson writes (255 levels), not deeper than the interpreter's json module reads
deep_values = st.builds(_nested, st.integers(min_value=250, max_value=600), _scalars, st.booleans())
json_objects = st.dictionaries(hostile_text, st.one_of(json_values, deep_values), max_size=2)

_field = st.fixed_dictionaries({"id": st.one_of(hostile_numbers, hostile_text), "name": hostile_text,
                                "type": st.one_of(hostile_text, json_values)},
                               optional={"doc": hostile_text})
schemas = st.fixed_dictionaries({"type": st.just("struct"), "fields": st.lists(_field, max_size=2)},
                                optional={"schema-id": hostile_numbers})
_summary = st.dictionaries(st.sampled_from(["operation", "added-data-files", "deleted-records", "added-records"])
                           | hostile_text, st.one_of(hostile_text, hostile_numbers), max_size=2)
updates = st.fixed_dictionaries(
    {"action": st.sampled_from(["add-schema", "add-snapshot", "set-properties", "remove-properties",
                                "remove-snapshots", "upgrade-format-version", "set-location", "add-spec",
                                "set-current-schema", "set-snapshot-ref", "remove-snapshot-ref", "assign-uuid"])
     | hostile_text},
    optional={"schema": schemas, "snapshot": st.fixed_dictionaries({"snapshot-id": hostile_numbers},
                                                                   optional={"summary": _summary}),
              "updates": json_objects, "removals": st.lists(hostile_text, max_size=2),
              "snapshot-ids": st.lists(hostile_numbers, max_size=2), "format-version": hostile_numbers,
              "location": hostile_text, "schema-id": hostile_numbers, "ref-name": hostile_text,
              "snapshot-id": hostile_numbers, "uuid": hostile_text, "type": hostile_text})
requests = st.one_of(json_objects, st.fixed_dictionaries(
    {}, optional={"schema": schemas, "updates": st.lists(updates, max_size=2), "properties": json_objects,
                  "location": hostile_text, "name": hostile_text}))

# a field holding a list of JSON objects (a commit's updates and requirements); every other list is of names
OBJECT_LISTS = {"updates": st.lists(updates, max_size=3), "requirements": st.lists(json_objects, max_size=1)}
# a metrics report (lakeledger/domain/metrics_report.py) shaped as the spec's, every value hostile
_metric = st.fixed_dictionaries({}, optional={"unit": hostile_text, "value": hostile_numbers, "time-unit": hostile_text,
                                             "count": hostile_numbers, "total-duration": hostile_numbers})
reports = st.one_of(json_objects, st.fixed_dictionaries({}, optional={
    "report-type": hostile_text, "table-name": hostile_text, "snapshot-id": hostile_numbers, "filter": json_values,
    "schema-id": hostile_numbers, "sequence-number": hostile_numbers, "operation": hostile_text,
    "projected-field-names": st.lists(st.one_of(hostile_text, hostile_numbers), max_size=2),
    "metrics": st.one_of(st.dictionaries(hostile_text, _metric, max_size=2), json_values),
    "metadata": st.one_of(json_objects, json_values)}))
OBJECT_FIELDS = {"request": requests, "report": reports}
_times = st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime(9999, 1, 1), timezones=st.just(UTC))


def _strategy(name: str, hint: object) -> st.SearchStrategy:
    options = typing.get_args(hint) if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union \
        else (hint,)
    made = [_one(name, option) for option in options if option is not type(None)]
    strategy = st.one_of(*made)
    return st.one_of(st.none(), strategy) if type(None) in options else strategy


def _one(name: str, hint: object) -> st.SearchStrategy:
    # list[str], list[JsonObject], dict[str, Any]: drawn as the bare list and dict were before the events were typed
    origin = typing.get_origin(hint)
    if origin in (list, dict):
        items = typing.get_args(hint)
        if origin is list and items and items[0] is not str and name not in OBJECT_LISTS:
            return st.lists(json_objects if typing.get_origin(items[0]) is dict or items[0] is dict
                            else _one(name, items[0]), max_size=3)
        hint = origin
    if hint is str:
        return hostile_text
    if hint is bool:
        return st.booleans()
    if hint is int:
        return st.one_of(st.integers(), st.sampled_from([10**30, -(10**30), 2**64]))
    if hint is float:  # a duration a worker measured; a log from elsewhere may hold any finite number
        return st.floats(allow_nan=False, allow_infinity=False)
    if hint is UUID:
        return st.uuids()
    if hint is datetime:
        return _times
    if hint is list:
        return OBJECT_LISTS.get(name, st.lists(hostile_text, max_size=3))
    if hint is dict:
        return OBJECT_FIELDS.get(name, json_objects)
    if hint is typing.Any:  # free-form JSON (a generic table's schema and statistics): any value, deep ones too
        return st.one_of(json_values, deep_values, json_objects)
    raise AssertionError(f"no strategy for a field {name}: {hint!r}; add one so the new event is covered")


_ENVELOPE = {"originator_id", "originator_version", "timestamp", "originator_topic"}


def _payload(cls: type) -> st.SearchStrategy:
    hints = typing.get_type_hints(cls)
    fields = {f.name: _strategy(f.name, hints[f.name]) for f in dataclasses.fields(cls) if f.name not in _ENVELOPE}
    return st.fixed_dictionaries(fields)


def _aggregate_of(cls: type) -> str:
    return cls.__qualname__.split(".")[0]


# one payload per event class per example: every class in every example; and a megabyte-long string in one field of
# one of them (in every field, a log of gigabytes), at the top (a name, a path, a location) or nested in a document
payloads = st.fixed_dictionaries({cls: _payload(cls) for cls in EVENT_CLASSES})
megabyte_in = st.tuples(st.sampled_from(EVENT_CLASSES), st.integers(min_value=0), st.booleans(), _megabyte)


def _with_megabyte(drawn: dict[type, dict], where: tuple) -> dict[type, dict]:
    cls, index, nested, text = where
    payload = dict(drawn[cls])
    names = sorted(name for name, value in payload.items() if isinstance(value, (str, list, dict)))
    if names:
        name = names[index % len(names)]
        value = payload[name]
        if isinstance(value, str):
            payload[name] = text
        elif isinstance(value, list):
            payload[name] = [*value, text] if not nested or not value or not isinstance(value[0], dict) \
                else [{**value[0], "big": text}, *value[1:]]
        else:
            payload[name] = {**value, text[:10]: text} if nested else {**value, "big": text}
    return {**drawn, cls: payload}
_unique = itertools.count()


def _events(drawn: dict[type, dict]) -> list:
    """The example's events in an order the domain could have recorded them: each aggregate's creation first (its
    version 1), then every other event of it; ids that must be unique (a user's) made so."""
    ids: dict[str, UUID] = {}
    versions: dict[UUID, int] = {}
    creations = [cls for cls in EVENT_CLASSES if issubclass(cls, Aggregate.Created)]
    ordered = creations + [cls for cls in EVENT_CLASSES if cls not in creations]
    events = []
    for cls in ordered:
        payload = dict(drawn[cls])
        if "user_id" in payload:  # the users read model's key, one user per id (User.Recreated after User.Deleted)
            payload["user_id"] = f"{payload['user_id']}#{next(_unique)}"
        if cls in creations:
            originator = uuid4()
            ids.setdefault(_aggregate_of(cls), originator)
        else:
            originator = ids.setdefault(_aggregate_of(cls), uuid4())
        versions[originator] = versions.get(originator, 0) + 1
        extra = {"originator_topic": _topic(_aggregate_class(cls))} if "originator_topic" in {
            f.name for f in dataclasses.fields(cls)} else {}
        events.append(cls(originator_id=originator, originator_version=versions[originator],
                          timestamp=datetime.now(UTC), **extra, **payload))
    return events


def _aggregate_class(cls: type) -> type:
    return resolve_topic(_topic(cls).rsplit(".", 1)[0])


# ---- the log and the read models ------------------------------------------------------------------------------


class Ledger:
    """An event log of its own in Postgres, every read model's runner on it, and a rebuild of them all."""

    def __init__(self, url: str, data_dir):
        migrate(Settings(pg_url=url, data_dir=data_dir), url)
        self.url = url
        self.log = EventLog(PostgresSettings.from_url(url), pool_size=2)
        self.pool = ConnectionPool(url, min_size=1, max_size=2, open=True)
        self.runners = [ProjectionDriver(p, self.log, self.pool) for p in PROJECTIONS]
        app = self.log._app
        self.recorder, self.mapper = app.recorder, app.mapper
        transcoder = self.mapper.transcoder
        # an encoder that writes unpaired surrogates as \\u escapes: how a log can hold them (UTF-8 cannot)
        self.ascii_encoder = json.JSONEncoder(default=transcoder._encode_obj, separators=(",", ":"), ensure_ascii=True)

    def append(self, events: list) -> None:
        """Through the event store's recorder, as an older version would have recorded them: no API, no checks."""
        stored = []
        for event in events:
            try:
                stored.append(self.mapper.to_stored_event(event))
            except UnicodeEncodeError:
                transcoder = self.mapper.transcoder
                plain, transcoder.encoder = transcoder.encoder, self.ascii_encoder
                try:
                    stored.append(self.mapper.to_stored_event(event))
                finally:
                    transcoder.encoder = plain
        self.recorder.insert_events(stored)

    def reset(self) -> None:
        """An empty log and empty read models: each example on its own, and a rebuild that replays only it."""
        tables = ", ".join(t for p in PROJECTIONS for t in p.tables)
        with psycopg.connect(self.url) as conn:
            conn.execute(f"TRUNCATE lakeledger_events, {tables}")
            conn.execute("UPDATE ll_projection_positions SET position = 0")

    def follow(self) -> None:
        for runner in self.runners:
            runner.advance()

    def rebuild(self) -> None:
        Rebuild(self.runners, self.log, self.url).run()

    def snapshot(self) -> dict[str, list]:
        out = {}
        with psycopg.connect(self.url) as conn:
            for table in (t for p in PROJECTIONS for t in p.tables):
                columns = [r[0] for r in conn.execute(
                    "SELECT column_name FROM information_schema.columns WHERE table_name = %s"
                    " AND table_schema = current_schema() ORDER BY ordinal_position", (table,)).fetchall()
                    if r[0] not in SURROGATE_KEYS.get(table, set())]
                listed = ", ".join(f'"{c}"' for c in columns)
                out[table] = conn.execute(f"SELECT {listed} FROM {table} ORDER BY {listed}").fetchall()
        return out

    def close(self) -> None:
        self.pool.close()
        self.log.close()


@pytest.fixture
def ledger(database, tmp_path):
    made = Ledger(database, tmp_path)
    yield made
    made.close()


def test_every_event_class_is_generated():
    """The walk finds the domain's events (a broken walk would test nothing), and each has a strategy."""
    names = {cls.__qualname__ for cls in EVENT_CLASSES}
    assert {"Table.Created", "Table.Committed", "Namespace.Created", "Warehouse.Created", "User.Created",
            "Role.MemberAdded", "Grant.Added", "View.Replaced", "NameClaim.Claimed"} <= names
    for cls in EVENT_CLASSES:
        _payload(cls)


# no shrinking: a failing example is reported as drawn (shrinking megabyte-long values takes minutes)
@settings(
    max_examples=int(os.environ.get("LAKELEDGER_TOTAL_EXAMPLES", 25)),
    deadline=None,
    phases=(Phase.explicit, Phase.generate),
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
    ],
)
@given(drawn=payloads, megabyte=megabyte_in)
def test_every_read_model_applies_any_event_and_a_rebuild_writes_the_same_rows(ledger, drawn, megabyte):
    ledger.reset()
    ledger.append(_events(_with_megabyte(drawn, megabyte)))
    ledger.follow()  # raises if a writer cannot apply an event
    live = ledger.snapshot()
    ledger.rebuild()
    rebuilt = ledger.snapshot()
    assert {t: (len(live[t]), len(rebuilt[t])) for t in live if live[t] != rebuilt[t]} == {}
    with psycopg.connect(ledger.url) as conn:
        behind = conn.execute("SELECT name FROM ll_projection_positions WHERE name = ANY(%s) AND position <"
                              " (SELECT max(notification_id) FROM lakeledger_events)",
                              ([p.name for p in PROJECTIONS],)).fetchall()
    assert behind == []


def test_the_issue_s_poison_event_is_applied_escaped_by_the_history_and_a_rebuild(ledger):
    """Issue 27's event: a table created with a schema field named "a\\u0000" (the API accepted it then). The history
    failed on it for ever and `lakeledger rebuild` failed on it; now both apply it, the NUL read back as U+FFFD."""
    table, namespace = uuid4(), uuid4()
    created = Table.Created(
        originator_id=table, originator_version=1, timestamp=datetime.now(UTC),
        originator_topic="lakeledger.domain.table:Table", actor="alice", request_id="r1", warehouse_id=uuid4(),
        namespace_id=namespace, namespace=["ns"], name="t", location="file:///w/ns/t",
        metadata_location="file:///w/ns/t/metadata/00000.metadata.json", origin="create",
        request={"name": "t", "schema": {"type": "struct", "schema-id": 0, "fields": [
            {"id": 1, "name": "a\x00", "type": "long", "required": False}]}})
    ledger.append([created])
    ledger.follow()
    live = ledger.snapshot()
    ledger.rebuild()
    assert ledger.snapshot() == live
    with psycopg.connect(ledger.url) as conn:
        fields, = conn.execute("SELECT fields FROM ll_history_entities WHERE id = %s", (table,)).fetchone()
        change, = conn.execute("SELECT change FROM ll_history WHERE entity_id = %s", (table,)).fetchone()
    assert fields == {"1": ["a\ufffd", "long"]}
    assert change["request"]["schema"]["fields"][0]["name"] == "a\ufffd"
