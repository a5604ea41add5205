"""What makes a table schema acceptable, checked before any metadata that holds it is written.

pyiceberg parses a schema and checks its identifier fields, but indexes field ids into a dict, so a
schema whose fields share an id parses and would be stored; readers then resolve columns to the wrong
field. The rules here are Java's ``Schema``: unique ids, unique names within a struct, and no type or
default that the table's format version cannot hold."""

from collections.abc import Iterator

from pyiceberg.schema import Schema
from pyiceberg.types import IcebergType, ListType, MapType, NestedField, StructType

from lakeledger.domain.errors import InvalidArgument

DEFAULT_VALUES_MIN_FORMAT_VERSION = 3


def check_schema(schema: Schema, format_version: int) -> None:
    seen: dict[int, str] = {}
    for path, field_id in _ids(schema.as_struct(), ()):
        name = ".".join(path)
        if field_id in seen:
            raise InvalidArgument(f"Invalid schema: field id {field_id} is used by both {seen[field_id]} and {name}")
        seen[field_id] = name
    _check_unique_names(schema.as_struct(), ())
    try:
        schema.check_format_version_compatibility(format_version)
    except ValueError as e:
        raise InvalidArgument(f"Invalid schema for v{format_version}: {e}") from None
    if format_version < DEFAULT_VALUES_MIN_FORMAT_VERSION:
        for path, field in _fields(schema.as_struct(), ()):
            if field.initial_default is not None:
                raise InvalidArgument(
                    f"Invalid schema for v{format_version}: invalid initial default for {'.'.join(path)}: "
                    f"non-null default ({field.initial_default}) is not supported until "
                    f"v{DEFAULT_VALUES_MIN_FORMAT_VERSION}")


def _fields(struct: StructType, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], NestedField]]:
    for field in struct.fields:
        here = (*path, field.name)
        yield here, field
        yield from _nested(field.field_type, here)


def _nested(typ: IcebergType, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], NestedField]]:
    if isinstance(typ, StructType):
        yield from _fields(typ, path)
    elif isinstance(typ, ListType):
        yield (*path, "element"), typ.element_field
        yield from _nested(typ.element_type, (*path, "element"))
    elif isinstance(typ, MapType):
        yield (*path, "key"), typ.key_field
        yield from _nested(typ.key_type, (*path, "key"))
        yield (*path, "value"), typ.value_field
        yield from _nested(typ.value_type, (*path, "value"))


def _ids(struct: StructType, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], int]]:
    for where, field in _fields(struct, path):
        yield where, field.field_id


def _check_unique_names(typ: IcebergType, path: tuple[str, ...]) -> None:
    if isinstance(typ, StructType):
        names: set[str] = set()
        for field in typ.fields:
            if field.name in names:
                raise InvalidArgument(f"Invalid schema: more than one field named {'.'.join((*path, field.name))}")
            names.add(field.name)
            _check_unique_names(field.field_type, (*path, field.name))
    elif isinstance(typ, ListType):
        _check_unique_names(typ.element_type, (*path, "element"))
    elif isinstance(typ, MapType):
        _check_unique_names(typ.key_type, (*path, "key"))
        _check_unique_names(typ.value_type, (*path, "value"))
