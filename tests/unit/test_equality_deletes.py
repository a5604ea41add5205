"""The spec's pairing of equality delete files with data files (lakeledger/domain/equality_deletes.py)."""

from lakeledger.domain.equality_deletes import EqualityDelete, EqualityDeleteIndex


def _index(*deletes: tuple[str, int, int, tuple, bool]) -> EqualityDeleteIndex[str]:
    return EqualityDeleteIndex(EqualityDelete(name, seq, spec, partition, is_global)
                               for name, seq, spec, partition, is_global in deletes)


def test_an_equality_delete_applies_only_to_data_written_strictly_before_it():
    index = _index(("d5", 5, 1, ("eu",), False), ("d3", 3, 1, ("eu",), False))
    assert sorted(index.for_data_file(2, 1, ("eu",))) == ["d3", "d5"]
    assert index.for_data_file(3, 1, ("eu",)) == ["d5"]  # the same sequence number: the same commit, not deleted
    assert index.for_data_file(4, 1, ("eu",)) == ["d5"]
    assert index.for_data_file(5, 1, ("eu",)) == []
    assert index.for_data_file(9, 1, ("eu",)) == []


def test_a_partitioned_equality_delete_applies_in_its_own_spec_and_partition_only():
    index = _index(("eu", 5, 1, ("eu",), False))
    assert index.for_data_file(1, 1, ("eu",)) == ["eu"]
    assert index.for_data_file(1, 1, ("us",)) == []
    assert index.for_data_file(1, 2, ("eu",)) == []  # same values, another spec


def test_an_equality_delete_of_an_unpartitioned_spec_applies_in_every_partition():
    index = _index(("global", 5, 0, (), True), ("eu", 6, 1, ("eu",), False))
    assert sorted(index.for_data_file(1, 1, ("eu",))) == ["eu", "global"]
    assert index.for_data_file(1, 1, ("us",)) == ["global"]
    assert index.for_data_file(5, 1, ("us",)) == []
    assert index.for_data_file(5, 1, ("eu",)) == ["eu"]


def test_an_index_without_deletes_is_empty():
    assert not _index()
    assert _index(("g", 1, 0, (), True))
    assert _index().for_data_file(0, 0, ()) == []
