import os

import pytest

from lakeledger.domain.storage_profile import FileStorageProfile
from lakeledger.storage.file import FileStorage


def test_a_new_file_is_written_into_a_folder_made_on_its_first_write(tmp_path):
    storage = FileStorage(FileStorageProfile(location=f"file://{tmp_path}"))
    first = f"file://{tmp_path}/t/metadata/custom/00000-a.metadata.json"  # no folder yet (write.metadata.path)
    storage.write_new(first, b"{}")
    storage.write_new(f"file://{tmp_path}/t/metadata/custom/00001-b.metadata.json", b"{ }")
    assert storage.read(first) == b"{}"
    assert sorted(os.listdir(tmp_path / "t/metadata/custom")) == ["00000-a.metadata.json", "00001-b.metadata.json"]


def test_a_new_file_never_replaces_one_already_there(tmp_path):
    storage = FileStorage(FileStorageProfile(location=f"file://{tmp_path}"))
    location = f"file://{tmp_path}/metadata/00000-a.metadata.json"
    storage.write_new(location, b"first")
    with pytest.raises(FileExistsError):
        storage.write_new(location, b"second")
    assert storage.read(location) == b"first"
