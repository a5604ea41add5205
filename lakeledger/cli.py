"""The ``lakeledger`` command: serve, migrate, workers, rebuild, projections, replay."""

import argparse
import signal
import sys
from typing import TYPE_CHECKING

from pydantic import ValidationError

from lakeledger.compat import run_exit_handlers  # imported now: the exit path has a deadline
from lakeledger.settings import Settings

if TYPE_CHECKING:
    from lakeledger.bootstrap import Container
    from lakeledger.sinks.replay import Sink
    from lakeledger.workers.runner import Follower, Workers

# A stop (SIGTERM) must end the process within 5 s whatever the database does: requests in flight get this long,
# the workers and pools a second or so each, the embedded Postgres' own stop the rest (lakeledger/postgres.py).
GRACEFUL_STOP_SECONDS = 1
STUCK_THREADS_WAIT_SECONDS = 0.5


def _container(settings: Settings, statement_timeout_seconds: float | None = None) -> "Container":
    """``statement_timeout_seconds``: None for the setting (serve, workers); 0 for commands whose statements are
    long by design (rebuild, replay)."""
    from lakeledger.authz.setup import AuthorizationSetupError
    from lakeledger.bootstrap import Container, migrate
    from lakeledger.postgres import postgres_url

    url = postgres_url(settings)
    try:
        if settings.auto_migrate:
            migrate(settings, url)
        return Container(settings, url, statement_timeout_seconds)
    except AuthorizationSetupError as e:
        raise SystemExit(f"lakeledger: {e}") from None


def _workers(container: "Container") -> "Workers":
    from lakeledger.projections.driver import ProjectionDriver
    from lakeledger.workers.expirer import Expirer
    from lakeledger.workers.purger import Purger, PurgeRetries
    from lakeledger.workers.runner import Follower, Workers

    # The catalog projection runs inside every append's transaction; it is here only to pick up
    # anything appended without it (it then finds nothing to do).
    settings = container.settings
    purger = Purger(container.ledger, container.storages, settings.purge_max_files_per_second,
                    settings.purge_retry_seconds)
    # users-roles, tags and maintenance policies, like the catalog, are applied inside their appends; here they keep
    # up with the other events, so the next such append has no long gap to read past
    # catalog-versions: a read as of a position catches it up too, but from near the head, not from far behind
    runners = [container.catalog_view, container.history_view, container.users_roles_view, container.access_history,
               container.catalog_versions, container.tags_view, container.metrics_reports_view,
               container.maintenance_policies_view, container.tasks_view,
               ProjectionDriver(purger, container.log, container.pool)]
    if container.authz_tuples is not None:  # caught up by requests too; here for appends no request made
        runners.append(container.authz_tuples)
    # woken by NOTIFY and their own timers; the poll is a long safety net (lakeledger/workers/runner.py)
    followers: list[Follower] = [Expirer(container.expiry_schedule, container.recycle_bin, settings.worker_poll_seconds,
                         min(1.0, settings.worker_poll_seconds)),
                 PurgeRetries(purger, container.pool, settings.worker_poll_seconds)]
    if settings.maintenance == "on":
        followers.extend(_maintenance(container))
    if settings.nats_address:
        from lakeledger.sinks.nats_auth import connect_options
        from lakeledger.workers.publisher import CloudEventsPublisher
        followers.append(CloudEventsPublisher(
            container.log, container.conninfo, address=settings.nats_address, stream=settings.nats_stream,
            subject=settings.nats_subject, server_id=settings.server_id,
            duplicate_window_seconds=settings.nats_duplicate_window_seconds,
            poll_seconds=settings.worker_poll_seconds, connect_options=connect_options(settings)))
    if settings.kafka_topic:
        from lakeledger.workers.kafka_publisher import KafkaPublisher
        assert settings.kafka_config is not None  # the settings' validator requires it with a topic
        followers.append(KafkaPublisher(
            container.log, container.conninfo, topic=settings.kafka_topic, config=settings.kafka_config,
            transactional_id=settings.kafka_transactional_id or f"lakeledger-{settings.server_id}",
            server_id=settings.server_id, poll_seconds=settings.worker_poll_seconds))
    return Workers(runners, container.conninfo, settings.worker_poll_seconds, settings.worker_batch_seconds,
                   followers=followers)


def _maintenance(container: "Container") -> list["Follower"]:
    from lakeledger.domain.table_maintenance import Backoff
    from lakeledger.maintenance.spark import SparkJobs
    from lakeledger.workers.maintainer import MaintenanceChecks, MaintenanceRuns

    settings = container.settings
    backoff = Backoff(settings.maintenance_retry_seconds, max_attempts=settings.maintenance_max_attempts)
    return [MaintenanceChecks(container.ledger, container.pool, container.files, container.storages,
                              settings.maintenance_check_seconds),
            MaintenanceRuns(container.ledger, container.pool, container.conninfo, container.files, container.storages,
                            SparkJobs(settings), container.tasks_view, backoff, settings.worker_poll_seconds)]


def serve(settings: Settings) -> None:
    from lakeledger.operations import shared_metrics

    # before any metric exists: the API processes started below write theirs where every scrape can sum them
    shared = shared_metrics.share_between_processes() if settings.api_processes > 1 \
        and settings.connections_fd is None else None
    try:
        _serve(settings)
    finally:
        if shared:
            shared_metrics.stop_sharing(shared)


def _serve(settings: Settings) -> None:
    from lakeledger import http_server
    from lakeledger.api.app import create_app
    from lakeledger.api_processes import ApiProcesses, Connections, HandedConnections
    from lakeledger.identity.openid_settings import ProviderUnavailable
    from lakeledger.operations import garbage_collector
    from lakeledger.postgres import supervise

    if settings.openid_configured and settings.authz_backend == "allowall" \
            and not settings.authz_allowall_with_openid:
        # with an identity provider the point is that callers differ; letting each of them do everything must be
        # a decision, not a default left in place
        raise SystemExit("lakeledger serve: an OpenID provider is set but LAKELEDGER__AUTHZ_BACKEND is "
                         "allowall, so every authenticated caller could do everything: set "
                         "LAKELEDGER__AUTHZ_BACKEND=openfga, or LAKELEDGER__AUTHZ_ALLOWALL_WITH_OPENID=true if that "
                         "is what you want (a single team)")
    container = _container(settings)
    supervise(settings)
    container.start()
    try:
        app = create_app(container)
    except ProviderUnavailable as e:
        container.close()
        raise SystemExit(f"lakeledger serve: {e}") from None
    workers = _workers(container) if settings.workers == "on" else None
    if workers:
        workers.start()
    group: ApiProcesses | None = None
    connections: Connections | None = None
    try:
        if settings.connections_fd is not None:
            connections = HandedConnections(settings.connections_fd)
        elif settings.api_processes > 1:
            connections = group = ApiProcesses(settings.api_processes, settings.listen_host, settings.listen_port)
            group.start()
        garbage_collector.settle_after_start()
        # uvicorn stops gracefully on SIGTERM/SIGINT, then raises the same signal again with our handlers
        # back in place: SIGTERM becomes SystemExit (main), SIGINT KeyboardInterrupt, so this `finally`
        # and the exit handlers (the embedded Postgres' stop) run either way.
        # log_config None: uvicorn's lines go through the handler lakeledger/operations/logs.py set up (text or JSON)
        # timeout_graceful_shutdown: requests still waiting on a stalled database must not hold up a stop (the
        # database bounds them too, but only as long as its statement timeout)
        http_server.run(app, connections=connections, host=settings.listen_host, port=settings.listen_port,
                         log_level=settings.log_level, access_log=False, log_config=None,
                         timeout_graceful_shutdown=GRACEFUL_STOP_SECONDS)
    finally:
        if group:
            group.stop()
        if workers:
            workers.stop()
        container.close()


def run_workers(settings: Settings) -> None:
    from lakeledger.operations import garbage_collector
    from lakeledger.postgres import supervise

    container = _container(settings)
    supervise(settings)
    workers = _workers(container)
    if settings.metrics_port is not None:
        from lakeledger.operations.metrics import serve_metrics

        serve_metrics(settings.metrics_port, settings.listen_host, {"background": container.pool})
    signal.signal(signal.SIGTERM, lambda *_: workers.stop())
    garbage_collector.settle_after_start()
    try:
        workers.run_forever()
    except KeyboardInterrupt:
        pass
    finally:
        container.close()


def run_migrate(settings: Settings) -> None:
    from lakeledger.authz.setup import AuthorizationSetupError
    from lakeledger.bootstrap import migrate

    try:
        applied = migrate(settings)
    except AuthorizationSetupError as e:
        raise SystemExit(f"lakeledger migrate: {e}") from None
    print("applied: " + (", ".join(applied) if applied else "nothing (up to date)"))


def run_rebuild(settings: Settings) -> None:
    from lakeledger.progress import Progress
    from lakeledger.projections.rebuild import Rebuild, RebuildRunning

    container = _container(settings, statement_timeout_seconds=0)
    try:
        # every read model in one pass over the log, into new tables swapped in together (blue/green)
        progress = Progress("rebuild")
        try:
            position = Rebuild(container.read_models, container.log, container.conninfo, progress.update,
                               apart_from=settings.rebuild_apart_from_events).run()
        except RebuildRunning as e:
            raise SystemExit(f"lakeledger rebuild: {e}") from None
        progress.finish(position)
        for runner in container.read_models:
            print(f"rebuilt the {runner.name} read model from the log up to position {position}")
    finally:
        container.close()


def run_projections(settings: Settings, args: argparse.Namespace) -> None:
    import psycopg

    from lakeledger.postgres import postgres_url

    with psycopg.connect(postgres_url(settings), autocommit=True) as conn:
        log_head = conn.execute("SELECT coalesce(max(notification_id), 0) FROM lakeledger_events").fetchone()
        assert log_head is not None  # an aggregate's one row
        head = log_head[0]
        rows = conn.execute("SELECT name, position, updated_at FROM ll_projection_positions ORDER BY name").fetchall()
    print(f"{'projection':<16} {'position':>10} {'lag':>8}  updated")
    for name, position, updated_at in rows:
        print(f"{name:<16} {position:>10} {head - position:>8}  {updated_at:%Y-%m-%d %H:%M:%S%z}")
    print(f"{'(log head)':<16} {head:>10}")


def run_replay(settings: Settings, args: argparse.Namespace) -> None:
    from pathlib import Path

    from lakeledger.progress import Progress
    from lakeledger.sinks.replay import parse_bound, replay

    try:
        start = parse_bound(args.start) if args.start else None
        stop = parse_bound(args.stop) if args.stop else None
    except ValueError as e:
        raise SystemExit(f"lakeledger replay: {e}") from None
    sink: Sink
    if args.sink == "jsonl":
        if not args.out:
            raise SystemExit("lakeledger replay: --sink jsonl needs --out FILE")
        from lakeledger.sinks.jsonl import JsonLinesSink
        sink = JsonLinesSink(Path(args.out))
    elif args.sink == "nats":
        if not args.nats_address:
            raise SystemExit("lakeledger replay: --sink nats needs --nats-address nats://host:4222")
        from lakeledger.sinks.nats_auth import connect_options
        from lakeledger.sinks.nats_subject import NatsSubjectSink
        sink = NatsSubjectSink(args.nats_address, args.subject, connect_options(settings))
    else:
        if not (args.uri and args.table):
            raise SystemExit("lakeledger replay: --sink iceberg needs --uri (the catalog) and --table ns.table")
        from lakeledger.sinks.iceberg_table import IcebergTableSink
        sink = IcebergTableSink(args.uri, args.warehouse, args.table)
    container = _container(settings, statement_timeout_seconds=0)
    progress = Progress("replay")  # positions of the range covered: a range may hold gaps (rolled-back appends)
    try:
        count = replay(container.log, sink, start, stop, progress.update)
        progress.finish()
    finally:
        container.close()
    print(f"replayed {count} events into the {args.sink} sink")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lakeledger", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("serve", help="run the REST API (and, unless LAKELEDGER__WORKERS=off, the workers)")
    commands.add_parser("migrate", help="create or upgrade the database schema (idempotent)")
    commands.add_parser("workers", help="run the projection, purge and CloudEvents workers as their own process")
    commands.add_parser("rebuild", help="replay the read models (catalog, history, users and roles, ...) from the "
                                        "event log into new tables, swapped in when complete (the API keeps serving)")
    commands.add_parser("projections", help="each projection's log position and how far it lags the log's head")
    replay = commands.add_parser("replay", help="stream a range of the log into a sink (no live position moves)")
    replay.add_argument("--sink", choices=("jsonl", "nats", "iceberg"), required=True)
    replay.add_argument("--from", dest="start", help="first log position (N or seq:N) or RFC 3339 instant")
    replay.add_argument("--to", dest="stop", help="last log position (N or seq:N) or RFC 3339 instant")
    replay.add_argument("--out", help="jsonl: the file to append to")
    replay.add_argument("--nats-address", help="nats: the server, e.g. nats://localhost:4222")
    replay.add_argument(
        "--subject", default="lakeledger.replay", help="nats: subject prefix (default lakeledger.replay)"
    )
    replay.add_argument("--uri", help="iceberg: the REST catalog's URI, e.g. http://localhost:8181")
    replay.add_argument("--warehouse", help="iceberg: the warehouse (default: the server's default warehouse)")
    replay.add_argument("--table", help="iceberg: namespace.table to create or append to")
    args = parser.parse_args(argv)
    _exit_cleanly_on_stop_signals()
    try:
        settings = Settings()
    except ValidationError as e:
        # a setting the server cannot run with is a message naming it, not a traceback (and never its value)
        raise SystemExit("lakeledger: invalid settings: " + "; ".join(
            (f"LAKELEDGER__{'__'.join(map(str, err['loc'])).upper()} " if err["loc"] else "")  # loc: one setting
            + err["msg"].removeprefix("Value error, ") for err in e.errors(include_input=False, include_url=False))
        ) from None
    from lakeledger.operations import logs

    logs.configure(settings.log_level, settings.log_format)
    code = 1
    try:
        if args.command in ("replay", "projections"):
            {"replay": run_replay, "projections": run_projections}[args.command](settings, args)
        else:
            {"serve": serve, "migrate": run_migrate, "workers": run_workers,
             "rebuild": run_rebuild}[args.command](settings)
        code = 0
    except KeyboardInterrupt:
        code = 130  # Ctrl-C: the shell's code for SIGINT, after an ordinary exit (exit handlers run)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if isinstance(e.code, str):  # printed by Python as it exits, which the ending below skips
            print(e.code, file=sys.stderr)
        raise
    except BaseException:
        import traceback

        traceback.print_exc()  # as Python prints it as it exits, which the ending below skips
        raise
    finally:
        if args.command in ("serve", "workers"):
            _end_without_waiting_for_stuck_threads(code)
    return code


def _end_without_waiting_for_stuck_threads(code: int) -> None:
    """Ends the process once its exit handlers (the embedded Postgres' stop) have run. Python would first join every
    non-daemon thread (a request's): one waiting on a stalled database would hold the stop up for as long as its
    answer timeout, and the exit handlers with it. They get a short wait; what one of them was still doing has an
    unknown outcome for its client, as when the process is killed. Python's own teardown that follows frees
    memory, which an exiting process need not do and which took a second or more under load."""
    import logging
    import os
    import threading
    import time

    deadline = time.monotonic() + STUCK_THREADS_WAIT_SECONDS
    for thread in threading.enumerate():
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join(max(0.0, deadline - time.monotonic()))
    stuck = [thread.name for thread in threading.enumerate()
             if thread is not threading.current_thread() and not thread.daemon and thread.is_alive()]
    if stuck:
        logging.getLogger("lakeledger").warning("stopping without waiting for %d threads still waiting on the "
                                                "database (%s)", len(stuck), ", ".join(stuck[:5]))
    run_exit_handlers()
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _exit_on_signal(signum, frame):
    raise SystemExit(0)


def _exit_cleanly_on_stop_signals() -> None:
    """SIGTERM and SIGHUP end the process by default without `finally` blocks or exit handlers, which
    would leave the embedded Postgres running with no user (lakeledger/postgres.py stops it at exit). As an
    exception they unwind like any other exit. A signal someone chose to ignore (nohup) stays ignored."""
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) is signal.SIG_DFL:
            signal.signal(sig, _exit_on_signal)


if __name__ == "__main__":
    sys.exit(main())
