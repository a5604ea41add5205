from uuid import uuid4

import pytest

from lakeledger.domain.errors import BadRequest
from lakeledger.domain.storage_profile import (
    FileStorageProfile,
    normalize_location,
    overlaps,
)
from lakeledger.domain.warehouse import parse_delete_profile, parse_storage_profile


def test_java_and_python_spellings_of_a_file_location_are_one():
    assert normalize_location("file:/data/x/") == "file:///data/x"
    assert normalize_location("file:///data/x") == "file:///data/x"
    assert normalize_location("/data/x") == "file:///data/x"


def test_dot_segments_are_refused():
    with pytest.raises(BadRequest):
        normalize_location("file:///data/x/../y")


def test_table_locations_must_be_strictly_inside_the_warehouse():
    profile = FileStorageProfile(location="file:///data/wh")
    assert profile.check_tabular_location("file:///data/wh/ns/t") == "file:///data/wh/ns/t"
    for outside in ("file:///data/other", "file:///data/wh", "file:///data/wh2/t", "s3://bucket/wh/t"):
        with pytest.raises(BadRequest):
            profile.check_tabular_location(outside)
    ns, tid = uuid4(), uuid4()
    assert profile.default_table_location(ns, tid) == f"file:///data/wh/{ns}/{tid}"


def test_overlap_is_prefix_by_path_segment():
    assert overlaps("file:///a/b", "file:///a/b/c")
    assert overlaps("file:///a/b/c", "file:///a/b")
    assert not overlaps("file:///a/b", "file:///a/bc")


def test_profiles_parse_lakekeeper_shapes():
    assert parse_storage_profile({"type": "file", "location": "file:///x"}).base_location() == "file:///x"
    s3 = parse_storage_profile({"type": "s3", "bucket": "bkt", "key-prefix": "p/", "region": "r"})
    assert s3.base_location() == "s3://bkt/p"
    assert parse_delete_profile(None).type == "hard"
    assert parse_delete_profile({"type": "soft", "expiration-seconds": 60}).expiration_seconds == 60
    for bad in ({"type": "file"}, {"type": "file", "location": "relative/path"}, {"type": "gcs"}):
        with pytest.raises(BadRequest):
            parse_storage_profile(bad)
    with pytest.raises(BadRequest):
        parse_delete_profile({"type": "soft", "expiration-seconds": -1})
