"""Which Postgres to use: the one ``LAKELEDGER__PG_URL`` names, or an embedded one (the pgserver
wheel) under the data directory, shared by every Lakeledger process given the same directory."""

from lakeledger.settings import Settings


def postgres_url(settings: Settings) -> str:
    if settings.pg_url:
        return settings.pg_url
    import pgserver

    pgdata = (settings.data_dir / "postgres").resolve()
    pgdata.mkdir(parents=True, exist_ok=True)
    server = pgserver.get_server(pgdata, cleanup_mode="stop")
    return server.get_uri()
