from typing import Protocol


class Storage(Protocol):
    # what the adapter's SDK raises when the store itself fails (registry.Guarded makes those a 503)
    failures: tuple[type[BaseException], ...]

    def write_new(self, location: str, data: bytes) -> None:
        """Writes a file that must not exist yet (metadata files are never overwritten)."""

    def read(self, location: str) -> bytes: ...

    def prepare_table_location(self, location: str) -> None:
        """Makes a new table's location ready for engines that write files there themselves, before and
        after their create is committed (DuckDB creates no parent directories); object stores need nothing."""

    def delete(self, location: str) -> None:
        """Deletes one file, if it exists."""

    def delete_tree(self, location: str, max_files_per_second: float = 0) -> int:
        """Deletes everything at and below ``location``, at most ``max_files_per_second`` files a second
        (0: no limit); returns the number of files removed. Deleting what is already gone is a no-op."""
