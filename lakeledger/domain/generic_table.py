"""A generic table (Lakekeeper's Generic Table API): a table in a format the catalog does not read (Lance, Delta,
a folder of Parquet files), registered with its format, its location and what its creator said of it. The catalog
names it, governs it and vends credentials for its location; engines write its files directly, so it has no
metadata file and no commits. Its life after a drop is every tabular's (domain/tabular.py)."""

import json
import re
from typing import Any
from uuid import UUID

from eventsourcing.domain import event

from lakeledger.domain.errors import BadRequest, NoSuchGenericTable
from lakeledger.domain.json_types import JsonObject
from lakeledger.domain.provenance import Provenance
from lakeledger.domain.tabular import GENERIC_TABLE, Tabular

# a generic table has no metadata file: its pointer is empty
NO_METADATA = ""
# the limits Lakekeeper sets: a format is a lower-case word (lance, delta, parquet, iceberg-v3 ...), and the
# free-form schema and statistics stay small enough to travel in every event and answer
FORMAT = re.compile(r"[a-z][a-z0-9_-]{0,63}")
MAX_BLOB_BYTES = 1024 * 1024


def check_description(format: str, schema: Any, statistics: Any) -> None:
    """400 for a format no engine could name, or a schema or statistics too large to keep."""
    if not FORMAT.fullmatch(format):
        raise BadRequest("Generic table format must start with a lowercase letter, contain only lowercase letters, "
                         "digits, '_' or '-', and be at most 64 characters")
    for field, value in (("schema", schema), ("statistics", statistics)):
        size = len(json.dumps(value)) if value is not None else 0
        if size > MAX_BLOB_BYTES:
            raise BadRequest(f"Generic table {field} of {size} bytes exceeds the limit of {MAX_BLOB_BYTES} bytes")


class GenericTable(Tabular):
    kind = GENERIC_TABLE
    word = "Generic table"
    not_found = NoSuchGenericTable

    class Created(Tabular.Created):
        """``format`` is an opaque string (lance, delta, parquet ...); ``schema`` and ``statistics`` free-form JSON
        the catalog keeps but never checks against the files."""

        format: str
        doc: str | None
        properties: dict[str, str]
        schema: Any
        statistics: Any

    @event(Created)
    def __init__(self, id: UUID, warehouse_id: UUID, namespace_id: UUID, namespace: list[str], name: str,
                 location: str, metadata_location: str, format: str, doc: str | None, properties: dict[str, str],
                 schema: Any, statistics: Any, actor: str, request_id: str):
        self._init_tabular(warehouse_id, namespace_id, namespace, name, location, metadata_location)
        self.format = format
        self.doc = doc
        self.properties = dict(properties)
        self.schema = schema
        self.statistics = statistics

    @classmethod
    def create(cls, id: UUID, warehouse_id: UUID, namespace_id: UUID, namespace: tuple[str, ...], name: str,
               location: str, description: JsonObject, by: Provenance) -> "GenericTable":
        """``description``: its format, doc, properties, schema and statistics (as ``Created`` names them)."""
        return cls(id=id, warehouse_id=warehouse_id, namespace_id=namespace_id, namespace=list(namespace), name=name,
                   location=location, metadata_location=NO_METADATA, format=description["format"],
                   doc=description.get("doc"), properties=description.get("properties") or {},
                   schema=description.get("schema"), statistics=description.get("statistics"),
                   actor=by.actor, request_id=by.request_id)
