"""The catalog's own history as an Iceberg table, written through an Iceberg REST catalog (this one), so
engines can query it with SQL. One snapshot per batch; the data of each event is kept as JSON text."""

import contextlib
from datetime import datetime
from typing import TYPE_CHECKING, Any

from lakeledger.sinks.envelope import to_json

if TYPE_CHECKING:
    from pyiceberg.schema import Schema
    from pyiceberg.table import Table

_SCHEMA_FIELDS = [
    ("id", "string", True), ("sequence", "long", True), ("time", "timestamptz", True), ("type", "string", True),
    ("entity_id", "string", True), ("entity_version", "long", True), ("actor", "string", False),
    ("request_id", "string", False), ("data", "string", False),
]


class IcebergTableSink:
    def __init__(self, uri: str, warehouse: str | None, table: str):
        self.uri, self.warehouse, self.identifier = uri, warehouse, table
        self._table: Table | None = None

    def __enter__(self) -> "IcebergTableSink":
        try:
            import pyarrow  # noqa: F401  (pyiceberg writes through pyarrow)
            from pyiceberg.catalog.rest import RestCatalog
        except ImportError:
            raise SystemExit("The iceberg sink needs pyarrow: pip install 'pyiceberg[pyarrow]'") from None
        from pyiceberg.exceptions import NamespaceAlreadyExistsError, NoSuchTableError

        properties = {"uri": self.uri, **({"warehouse": self.warehouse} if self.warehouse else {})}
        catalog = RestCatalog("lakeledger-replay", **properties)
        namespace = tuple(self.identifier.split(".")[:-1])
        if not namespace:
            raise SystemExit(f"--table {self.identifier!r} needs a namespace: namespace.table")
        with contextlib.suppress(NamespaceAlreadyExistsError):
            catalog.create_namespace(namespace)
        try:
            self._table = catalog.load_table(self.identifier)
        except NoSuchTableError:
            self._table = catalog.create_table(self.identifier, schema=_schema())
        return self

    def write(self, batch: list[dict[str, Any]]) -> None:
        import pyarrow as pa

        assert self._table is not None, "write inside the with block"
        rows: dict[str, list[Any]] = {name: [] for name, _, _ in _SCHEMA_FIELDS}
        for e in batch:
            for name, _, _ in _SCHEMA_FIELDS:
                value: Any = e.get(name)  # an envelope (lakeledger/sinks/envelope.py) holds every field
                if name == "time":
                    value = datetime.fromisoformat(value)
                elif name == "data":
                    value = to_json(value).decode()
                rows[name].append(value)
        self._table.append(pa.Table.from_pydict(rows, schema=self._table.schema().as_arrow()))

    def __exit__(self, *exc: object) -> None:
        self._table = None


def _schema() -> "Schema":
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField, StringType, TimestamptzType

    types = {"string": StringType(), "long": LongType(), "timestamptz": TimestamptzType()}
    return Schema(*(NestedField(i + 1, name, types[kind], required=required)
                    for i, (name, kind, required) in enumerate(_SCHEMA_FIELDS)))
