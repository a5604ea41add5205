"""The ``lakeledger`` command: serve, migrate, workers."""

import argparse
import logging
import signal
import sys

from .settings import Settings


def _container(settings: Settings):
    from .bootstrap import Lakeledger, migrate
    from .postgres import postgres_url

    url = postgres_url(settings)
    if settings.auto_migrate:
        migrate(settings, url)
    return Lakeledger(settings, url)


def _workers(container):
    from .projections.runner import ProjectionRunner
    from .workers.purger import Purger
    from .workers.runner import Workers

    # The catalog projection runs inside every append's transaction; it is here only to pick up
    # anything appended without it (it then finds nothing to do).
    runners = [container.catalog_view, ProjectionRunner(Purger(container.log), container.log, container.pool)]
    return Workers(runners, container.conninfo, container.settings.worker_poll_seconds)


def serve(settings: Settings) -> None:
    import uvicorn

    from .api.app import create_app

    container = _container(settings)
    container.start()
    workers = _workers(container) if settings.workers == "on" else None
    if workers:
        workers.start()
    try:
        uvicorn.run(create_app(container), host=settings.listen_host, port=settings.listen_port,
                    log_level=settings.log_level, access_log=False)
    finally:
        if workers:
            workers.stop()
        container.close()


def run_workers(settings: Settings) -> None:
    container = _container(settings)
    workers = _workers(container)
    signal.signal(signal.SIGTERM, lambda *_: workers.stop())
    try:
        workers.run_forever()
    except KeyboardInterrupt:
        pass
    finally:
        container.close()


def run_migrate(settings: Settings) -> None:
    from .bootstrap import migrate

    applied = migrate(settings)
    print("applied: " + (", ".join(applied) if applied else "nothing (up to date)"))


def run_rebuild(settings: Settings) -> None:
    container = _container(settings)
    try:
        position = container.catalog_view.rebuild()
        print(f"rebuilt the catalog read model from the log up to position {position}")
    finally:
        container.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lakeledger", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("serve", help="run the REST API (and, unless LAKELEDGER__WORKERS=off, the workers)")
    commands.add_parser("migrate", help="create or upgrade the database schema (idempotent)")
    commands.add_parser("workers", help="run the projection and purge workers as their own process")
    commands.add_parser("rebuild", help="empty the catalog read model and replay it from the event log")
    args = parser.parse_args(argv)
    settings = Settings()
    logging.basicConfig(level=settings.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    {"serve": serve, "migrate": run_migrate, "workers": run_workers, "rebuild": run_rebuild}[args.command](settings)
    return 0


if __name__ == "__main__":
    sys.exit(main())
