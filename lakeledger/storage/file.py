import contextlib
import os
import time

from lakeledger.domain.errors import BadRequest, NotFound
from lakeledger.domain.storage_profile import FileStorageProfile, is_within, normalize_location


class FileStorage:
    """Local files under a ``file://`` warehouse location. New files are fsynced before the event that
    points at them is appended, so a crash never leaves the log naming a file that was lost."""

    # a full disk, a lost mount, a folder the catalog may not write; an existing or a missing file is translated first
    failures: tuple[type[BaseException], ...] = (OSError,)

    def __init__(self, profile: FileStorageProfile):
        self.profile = profile

    def _path(self, location: str) -> str:
        location = normalize_location(location)
        if not location.startswith("file://"):
            raise BadRequest(f"Not a file location: {location}")
        return location[len("file://"):]

    def _inside(self, location: str) -> str:
        """The local path of a location strictly inside the warehouse; anything else is refused."""
        location = normalize_location(location)
        base = self.profile.base_location()
        if not is_within(location, base) or location == base:
            raise BadRequest(f"Refusing to delete {location}: not strictly inside {base}")
        return self._path(location)

    def write_new(self, location: str, data: bytes) -> None:
        path = self._path(location)
        try:
            f = open(path, "xb")
        except FileNotFoundError:  # the folder is made by the first write into it, not looked for by every one: each
            # system call lets go of the GIL, and under a commit load taking it back costs more than the call
            os.makedirs(os.path.dirname(path), exist_ok=True)
            f = open(path, "xb")
        with f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())

    def prepare_table_location(self, location: str) -> None:
        path = self._inside(location)
        for folder in ("data", "metadata"):  # Iceberg's default layout under a table's location
            os.makedirs(os.path.join(path, folder), exist_ok=True)

    def read(self, location: str) -> bytes:
        try:
            with open(self._path(location), "rb") as f:
                return f.read()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            raise NotFound(f"File does not exist: {location}") from None

    def delete(self, location: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.remove(self._inside(location))

    def delete_tree(self, location: str, max_files_per_second: float = 0) -> int:
        path = self._inside(location)
        if os.path.islink(path) or os.path.isfile(path):
            os.remove(path)
            return 1
        interval = 1.0 / max_files_per_second if max_files_per_second > 0 else 0.0
        count = 0
        # bottom-up, never following a link: a link inside the tree is removed, not what it points to
        for root, dirs, files in os.walk(path, topdown=False, followlinks=False):
            for name in files + [d for d in dirs if os.path.islink(os.path.join(root, d))]:
                try:
                    os.remove(os.path.join(root, name))
                    count += 1
                except FileNotFoundError:
                    continue
                if interval:
                    time.sleep(interval)
            for name in dirs:
                # gone already, or not empty because a file appeared: left for the next run
                with contextlib.suppress(OSError):
                    os.rmdir(os.path.join(root, name))
        with contextlib.suppress(OSError):
            os.rmdir(path)
        return count
