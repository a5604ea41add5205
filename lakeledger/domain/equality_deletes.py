"""Which equality delete files apply to a data file, by the Iceberg spec's scan planning rules: an equality delete
file applies to a data file whose data sequence number is strictly lower than its own (rows written in the same
commit, or later, are not deleted by it) and that is in its partition — the same spec id and partition tuple — or
to every data file of the table when it was written with an unpartitioned spec (a global equality delete).

pyiceberg's planner pairs position deletes and refuses equality deletes; this is the missing pairing, over its
files (or anything else: the index only keeps and hands back what it was given)."""

from bisect import bisect_right
from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

File = TypeVar("File")


@dataclass(frozen=True)
class EqualityDelete(Generic[File]):
    file: File
    sequence_number: int  # the delete file's data sequence number
    spec_id: int
    partition: Hashable  # the partition tuple, comparable with the data files'
    is_global: bool  # written with an unpartitioned spec: it applies in every partition


class _BySequence(Generic[File]):
    def __init__(self, deletes: list[EqualityDelete[File]]):
        ordered = sorted(deletes, key=lambda d: d.sequence_number)
        self.sequence_numbers = [d.sequence_number for d in ordered]
        self.files = [d.file for d in ordered]

    def newer_than(self, sequence_number: int) -> list[File]:
        return self.files[bisect_right(self.sequence_numbers, sequence_number):]


class EqualityDeleteIndex(Generic[File]):
    """The equality delete files of one scan, looked up per data file."""

    def __init__(self, deletes: Iterable[EqualityDelete[File]]):
        grouped: dict[tuple[int, Hashable], list[EqualityDelete[File]]] = {}
        global_deletes: list[EqualityDelete[File]] = []
        for delete in deletes:
            if delete.is_global:
                global_deletes.append(delete)
            else:
                grouped.setdefault((delete.spec_id, delete.partition), []).append(delete)
        self._by_partition = {key: _BySequence(found) for key, found in grouped.items()}
        self._global = _BySequence(global_deletes)

    def __bool__(self) -> bool:
        return bool(self._by_partition) or bool(self._global.files)

    def for_data_file(self, sequence_number: int, spec_id: int, partition: Hashable) -> list[File]:
        """The delete files that apply to a data file of this data sequence number, spec and partition."""
        found = self._global.newer_than(sequence_number)
        local = self._by_partition.get((spec_id, partition))
        return found + local.newer_than(sequence_number) if local is not None else found
