"""Iceberg v3 types that pyiceberg 0.12 lacks or spells otherwise, kept exactly as the client spelt them.

pyiceberg 0.12 parses ``unknown``, ``timestamp_ns``, ``timestamptz_ns`` and the bare ``geometry`` and ``geography``
and writes them back unchanged: those stay pyiceberg's. It has no ``variant`` at all, and it reads and writes the
parameters of ``geometry(C)`` and ``geography(C, A)`` in a quoted form of its own (``geometry('srid:4326')``) where
the spec and Java write ``geometry(srid:4326)``, and drops an explicit default algorithm: a Java client's schema
would be refused or rewritten.

Such a type becomes a pyiceberg type of this module placed in pyiceberg's own schema models (a ``NestedField``'s
type, a list's element, a map's key or value), which writes the spelling it was read with. Everything else about
the schema (ids, names, fresh ids on create, reuse of an equal schema, identifier fields, format-version checks,
partition and sort rules) stays pyiceberg's: ``variant`` says it is not primitive, as in Java, so pyiceberg refuses
it as an identifier field or a partition or sort source; the geospatial types are pyiceberg's own geometry and
geography classes, so pyiceberg's rules for those (no identity transform, v3 only) apply to them too.

pyiceberg's validators parse type strings before any hook can see them, so the JSON is prepared first: ``in_schema``
and its kin put these types in place of their spellings wherever a schema enters pyiceberg (a request body, an
``add-schema`` update, a metadata file). A registered extension is not possible: pyiceberg's type parser is one
function compiled into the validators of every model that holds a type. Pure: nothing here does I/O."""

import re
from typing import Any, Literal, Self

from pydantic import Field, model_serializer
from pyiceberg.exceptions import ValidationError as IcebergValidationError
from pyiceberg.typedef import TableVersion
from pyiceberg.types import GeographyType, GeometryType, IcebergType, NestedField, PrimitiveType

V3: TableVersion = 3

# the spec's spellings (format/spec.md, "JSON serialization"), with Java's whitespace inside the parentheses;
# pyiceberg's quotes around a parameter are accepted too (and kept), so nothing a pyiceberg client sends is refused
_GEOMETRY = re.compile(r"geometry(?:\(\s*[^)\s][^)]*?\s*\))?")
_GEOGRAPHY = re.compile(r"geography(?:\(\s*[^,)\s][^,)]*?\s*(?:,\s*[^,)\s]+?\s*)?\))?")
EDGE_ALGORITHMS = ("spherical", "vincenty", "thomas", "andoyer", "karney")


class VariantType(PrimitiveType):
    """``variant``: semi-structured values. A ``PrimitiveType`` for pyiceberg's schema visitors, which know no other
    leaf, but not primitive to its rules (Java's ``Types.VariantType`` is not one either)."""

    root: Literal["variant"] = Field(default="variant")

    @property
    def is_primitive(self) -> bool:
        return False

    def minimum_format_version(self) -> TableVersion:
        return V3


class SpeltGeometryType(GeometryType):
    """``geometry(C)`` as the spec spells it; ``root`` is the spelling, written back as it came."""

    # pyiceberg's types are singletons keyed by their constructor's arguments: model_construct's call has none,
    # and every spelling would be one instance
    def __new__(cls, *args: Any, **kwargs: Any) -> "Self":
        return object.__new__(cls)

    root: str  # pyiceberg's root is the CRS alone

    @model_serializer
    def ser_model(self) -> str:
        return self.root

    @property
    def crs(self) -> str:
        return _parameters(self.root)[0]

    def __str__(self) -> str:
        return self.root

    def __repr__(self) -> str:
        return f"SpeltGeometryType({self.root!r})"


class SpeltGeographyType(GeographyType):
    """``geography(C, A)`` as the spec spells it; ``root`` is the spelling, written back as it came."""

    # pyiceberg's types are singletons keyed by their constructor's arguments: model_construct's call has none,
    # and every spelling would be one instance
    def __new__(cls, *args: Any, **kwargs: Any) -> "Self":
        return object.__new__(cls)

    root: str  # type: ignore[assignment]  # pyiceberg's root is (CRS, algorithm)

    @model_serializer
    def ser_model(self) -> str:
        return self.root

    @property
    def crs(self) -> str:
        return _parameters(self.root)[0]

    @property
    def algorithm(self) -> str:
        found = _parameters(self.root)
        return found[1] if len(found) > 1 else GeographyType().algorithm

    def __str__(self) -> str:
        return self.root

    def __repr__(self) -> str:
        return f"SpeltGeographyType({self.root!r})"


VARIANT = VariantType.model_construct("variant")


def _parameters(spelling: str) -> list[str]:
    inside = spelling[spelling.index("(") + 1:-1] if "(" in spelling else ""
    return [part.strip().strip("'\"") for part in inside.split(",")] if inside else []


def _pyiceberg_writes_back(spelling: str) -> bool:
    try:
        parsed = NestedField(0, "probe", spelling).field_type
    except (ValueError, IcebergValidationError):
        return False
    return str(parsed) == spelling


def kept(spelling: str) -> IcebergType | None:
    """The type this module keeps for ``spelling``, or None when the spelling is pyiceberg's to parse (or refuse)."""
    if spelling == "variant":
        return VARIANT
    if spelling.startswith("geometry") and _GEOMETRY.fullmatch(spelling) and not _pyiceberg_writes_back(spelling):
        return _constructed(SpeltGeometryType, spelling)
    if spelling.startswith("geography") and _GEOGRAPHY.fullmatch(spelling) and not _pyiceberg_writes_back(spelling):
        found = _parameters(spelling)
        if len(found) > 1 and found[1].lower() not in EDGE_ALGORITHMS:
            return None  # pyiceberg refuses it, as the spec's unknown algorithm it is
        return _constructed(SpeltGeographyType, spelling)
    return None


def _constructed(cls: type[SpeltGeometryType] | type[SpeltGeographyType], spelling: str) -> IcebergType:
    # without validation: pyiceberg's type validator would parse the spelling again, with its own grammar
    return cls.model_construct(root=spelling)


def _type(typ: Any) -> Any:
    if isinstance(typ, str):
        found = kept(typ)
        return found if found is not None else typ
    if isinstance(typ, dict):
        kind = typ.get("type")
        if kind == "struct":
            return in_struct(typ)
        if kind == "list" and "element" in typ:
            return {**typ, "element": _type(typ["element"])}
        if kind == "map":
            return {**typ, **{k: _type(typ[k]) for k in ("key", "value") if k in typ}}
    return typ


def in_struct(struct: Any) -> Any:
    """A struct's JSON (a schema is one) with the types of this module in place of their spellings; any other
    value unchanged, for pyiceberg to judge."""
    if not isinstance(struct, dict) or not isinstance(struct.get("fields"), list | tuple):  # a model's dump: tuple
        return struct
    fields = [{**f, "type": _type(f["type"])} if isinstance(f, dict) and "type" in f else f for f in struct["fields"]]
    return {**struct, "fields": fields}


def in_metadata(metadata: Any) -> Any:
    """Table or view metadata's JSON with the types of this module in its schemas (``schemas``, v1's ``schema``)."""
    if not isinstance(metadata, dict):
        return metadata
    out = dict(metadata)
    if isinstance(out.get("schemas"), list | tuple):
        out["schemas"] = [in_struct(s) for s in out["schemas"]]
    if "schema" in out:
        out["schema"] = in_struct(out["schema"])
    return out


def in_updates(updates: Any) -> Any:
    """A commit's updates as sent, with the types of this module in the schemas its ``add-schema`` updates add."""
    if not isinstance(updates, list):
        return updates
    return [{**u, "schema": in_struct(u["schema"])} if isinstance(u, dict) and u.get("action") == "add-schema"
            and "schema" in u else u for u in updates]


# what a metadata file holds only when it has one of these types: cheaper to look for than to parse twice
_MARKERS = (b'"variant"', b'"geometry(', b'"geography(')


def may_hold(data: bytes) -> bool:
    """Whether metadata JSON may hold a type of this module (False: pyiceberg parses it as it is)."""
    return any(marker in data for marker in _MARKERS)
