"""SQL for everything that is not the event table (which the eventsourcing library owns), and for the one
column Lakeledger adds to it: each event's append time (0005_append_time.sql).

Files are applied in name order, once each, recorded in ``ll_schema_migrations``."""

from importlib.resources import files


def sql_files() -> list[tuple[str, str]]:
    here = files(__name__)
    names = sorted(p.name for p in here.iterdir() if p.name.endswith(".sql"))
    return [(name, (here / name).read_text()) for name in names]
