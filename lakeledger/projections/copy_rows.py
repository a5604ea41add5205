"""Values written by a rebuild's COPY in the form Postgres reads them, where psycopg's own dumper costs more than
the statement: a text array as its literal (psycopg checks every element against a pattern to decide its
quoting; here every element is quoted)."""

from collections.abc import Sequence
from typing import overload


@overload
def text_array(items: Sequence[str]) -> str: ...


@overload
def text_array(items: None) -> None: ...


@overload
def text_array(items: Sequence[str] | None) -> str | None: ...


def text_array(items: Sequence[str] | None) -> str | None:
    """``{"a","b"}`` for ``["a", "b"]``: a literal Postgres reads back as the same ``text[]``."""
    if items is None:
        return None
    return "{" + ",".join('"' + item.replace("\\", "\\\\").replace('"', '\\"') + '"' for item in items) + "}"
