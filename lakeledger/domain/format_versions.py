"""A warehouse's format-version policy (Lakekeeper 0.13): which Iceberg table format versions a table of the warehouse
may be created with or upgraded to, and the version a create that names none gets. Only creates and upgrades are
held to it, so tightening a policy never blocks writes to tables that exist."""

from dataclasses import dataclass
from typing import Any

from lakeledger.domain.errors import BadRequest
from lakeledger.domain.table_changes import TABLE_FORMAT_VERSIONS

PREFERRED_DEFAULT = 2  # a create naming no version gets v2 where allowed (Lakekeeper's and pyiceberg's default)


class FormatVersionRefused(BadRequest):
    """Lakekeeper's 400 types: ``EmptyAllowedFormatVersions``, ``DefaultFormatVersionNotAllowed``,
    ``FormatVersionNotAllowed``."""

    def __init__(self, error_type: str, message: str):
        super().__init__(message)
        self.error_type = error_type


@dataclass(frozen=True)
class FormatVersionPolicy:
    allowed: tuple[int, ...] = tuple(TABLE_FORMAT_VERSIONS)
    default: int | None = None

    def resolved_default(self) -> int:
        if self.default is not None:
            return self.default
        return PREFERRED_DEFAULT if PREFERRED_DEFAULT in self.allowed else max(self.allowed)

    def ensure_allowed(self, version: int) -> None:
        """A version the catalog cannot write at all is left to the metadata's own checks (their error)."""
        if version in TABLE_FORMAT_VERSIONS and version not in self.allowed:
            listed = ", ".join(str(v) for v in self.allowed)
            raise FormatVersionRefused("FormatVersionNotAllowed", f"Table format version 'v{version}' is not allowed "
                                                                  f"in this warehouse. Allowed versions: [{listed}]")


ALL_VERSIONS = FormatVersionPolicy()


def parse_format_version_policy(allowed: Any, default: Any) -> FormatVersionPolicy:
    """``allowed`` None: every version; duplicates go and the order is ascending, as Lakekeeper keeps them."""
    if allowed is None:
        versions = tuple(TABLE_FORMAT_VERSIONS)
    else:
        if not isinstance(allowed, list) or not all(type(v) is int for v in allowed):
            raise BadRequest("allowed-format-versions must be a list of format versions (1, 2, 3)")
        if not allowed:
            raise FormatVersionRefused("EmptyAllowedFormatVersions", "allowed-format-versions must not be empty")
        unknown = sorted(set(allowed) - set(TABLE_FORMAT_VERSIONS))
        if unknown:
            raise BadRequest(f"Unknown table format versions in allowed-format-versions: {unknown}; "
                             f"this catalog writes {list(TABLE_FORMAT_VERSIONS)}")
        versions = tuple(sorted(set(allowed)))
    if default is not None:
        if type(default) is not int:
            raise BadRequest("default-format-version must be a format version (1, 2, 3) or null")
        if default not in versions:
            raise FormatVersionRefused("DefaultFormatVersionNotAllowed",
                                       f"default_format_version '{default}' is not in allowed_format_versions")
    return FormatVersionPolicy(versions, default)
