"""Which v3 type spellings the catalog keeps itself and which stay pyiceberg's (lakeledger/domain/v3_types.py), and
that a schema holding them survives pyiceberg's model, its JSON and a dump-and-validate round, byte for byte."""

import copy
import json

import pytest
from pyiceberg.schema import Schema
from pyiceberg.types import GeographyType, GeometryType

from lakeledger.domain import v3_types


@pytest.mark.parametrize(("spelling", "kind"), [
    ("variant", v3_types.VariantType),
    ("geometry(srid:4326)", v3_types.SpeltGeometryType),
    ("geometry( srid:4326 )", v3_types.SpeltGeometryType),
    ("geography(srid:4326, spherical)", v3_types.SpeltGeographyType),
    ("geography(srid:4269,KARNEY)", v3_types.SpeltGeographyType),
    ("geography(OGC:CRS84)", v3_types.SpeltGeographyType),
    # pyiceberg reads it but would write it without the default algorithm
    ("geography('EPSG:4326', 'spherical')", v3_types.SpeltGeographyType),
])
def test_spellings_pyiceberg_lacks_or_rewrites_are_kept(spelling, kind):
    found = v3_types.kept(spelling)
    assert type(found) is kind and str(found) == spelling and found.minimum_format_version() == 3


@pytest.mark.parametrize("spelling", ["geometry", "geography", "geometry('EPSG:4326')", "unknown", "timestamp_ns",
                                      "timestamptz_ns", "long", "decimal(9, 2)",
                                      # refused by pyiceberg, as the spec refuses them
                                      "geometry()", "geography(srid:4326, flat)", "Variant", "variant(1)"])
def test_everything_else_stays_pyicebergs(spelling):
    assert v3_types.kept(spelling) is None


def test_the_geospatial_types_are_pyicebergs_with_their_parameters():
    geometry = v3_types.kept("geometry(srid:3857)")
    geography = v3_types.kept("geography( srid:4269 , karney )")
    assert isinstance(geometry, GeometryType) and geometry.crs == "srid:3857"
    assert isinstance(geography, GeographyType) and (geography.crs, geography.algorithm) == ("srid:4269", "karney")
    assert v3_types.kept("geography(srid:1)").algorithm == "spherical"
    assert v3_types.kept("geometry(srid:1)") != v3_types.kept("geometry(srid:2)")
    assert v3_types.kept("variant").is_primitive is False


def test_a_schema_of_every_v3_type_round_trips():
    sent = {"type": "struct", "schema-id": 3, "identifier-field-ids": [], "fields": [
        {"id": 1, "name": "v", "type": "variant", "required": False},
        {"id": 2, "name": "g", "type": "geometry(srid:4326)", "required": False},
        {"id": 3, "name": "l", "required": False, "type": {
            "type": "list", "element-id": 5, "element": "geography(srid:4326, karney)", "element-required": True}},
        {"id": 4, "name": "m", "required": False, "type": {
            "type": "map", "key-id": 6, "key": "string", "value-id": 7, "value": "variant", "value-required": False}},
        {"id": 8, "name": "t", "type": "timestamptz_ns", "required": False}]}
    schema = Schema.model_validate(v3_types.in_struct(sent))
    assert json.loads(schema.model_dump_json()) == sent
    assert Schema.model_validate(v3_types.in_struct(schema.model_dump())) == schema == copy.deepcopy(schema)
    with pytest.raises(ValueError, match="variant is only supported in 3 or higher"):
        schema.check_format_version_compatibility(2)


def test_only_metadata_that_may_hold_one_takes_the_slower_parse():
    assert v3_types.may_hold(b'{"type":"variant"}') and v3_types.may_hold(b'"geography(srid:1)"')
    assert not v3_types.may_hold(b'{"type":"geometry"}')
