import asyncio
from contextlib import asynccontextmanager
from datetime import timedelta

from anyio import to_thread
from fastapi import FastAPI
from psycopg_pool import AsyncConnectionPool

from lakeledger import __version__
from lakeledger.api import errors, identifiers, openapi
from lakeledger.api.authentication import Authentication
from lakeledger.api.compression import CompressedResponses
from lakeledger.api.context import RequestContext
from lakeledger.api.fast_commit import FastCommitTable
from lakeledger.api.fast_load import FastLoadTable
from lakeledger.api.idempotency import IdempotentRequests
from lakeledger.api.keyed_locks import KeyedLocks
from lakeledger.api.maintenance import MaintenanceGate, MaintenanceMode, follow
from lakeledger.api.responses import JSONResponse
from lakeledger.api.routers import (
    access_history,
    actions,
    config,
    console,
    events,
    generic_tables,
    grants,
    history,
    maintenance,
    maintenance_policies,
    management,
    metrics_reports,
    namespace_moves,
    namespaces,
    operations,
    permissions,
    protection,
    recycle_bin,
    roles,
    scan_planning,
    search,
    signer,
    statistics,
    storage_validation,
    tables,
    tags,
    tasks,
    users,
    views,
)
from lakeledger.api.time_travel import ReadOnlyPast
from lakeledger.authz.token_roles import TokenRoles
from lakeledger.eventstore.postgres_failures import AsyncBoundedConnection, bounded_connection, pool_connection_options
from lakeledger.identity.openid_settings import OpenIdSettings
from lakeledger.migrations import sql_files
from lakeledger.operations.database_collector import DatabaseCollector
from lakeledger.operations.endpoint_statistics import CountEndpointCalls, EndpointCalls, flush_every
from lakeledger.operations.health import ReadinessChecks
from lakeledger.operations.metrics import observe_pools
from lakeledger.operations.observed_requests import ObservedRequests, RecordRoute
from lakeledger.projections.access_history_queries import AccessHistoryQueries
from lakeledger.projections.catalog_queries import AsyncCatalogQueries
from lakeledger.projections.events_queries import EventQueries
from lakeledger.projections.history_queries import HistoryQueries
from lakeledger.projections.maintenance_policies_queries import MaintenancePolicyQueries
from lakeledger.projections.metrics_reports_queries import MetricsReportsQueries
from lakeledger.projections.statistics_queries import StatisticsQueries
from lakeledger.projections.tags_queries import TagQueries
from lakeledger.projections.tasks_queries import TaskQueries
from lakeledger.projections.users_roles_queries import UsersRolesQueries
from lakeledger.services.idempotency import ResponseStore
from lakeledger.sinks.nats_auth import connect_options

POOL_METRICS_SECONDS = 5.0
# how long a stop waits for the pool's threads (a stalled database can hold them)
POOL_CLOSE_SECONDS = 0.1


def create_app(container) -> FastAPI:
    """``container`` is the composition root (lakeledger.bootstrap.Container). With OpenID providers configured,
    their discovery documents are fetched here: identity.oidc.ProviderUnavailable when a required one's cannot be."""
    openid = OpenIdSettings.all_from_settings(container.settings)
    verifier = None
    if openid:
        from lakeledger.identity.oidc import OpenIdProviders

        verifier = OpenIdProviders.start(openid)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        # autocommit: a lookup is one statement, not BEGIN/SELECT/COMMIT
        statement_timeout = container.statement_timeout_seconds
        pool = AsyncConnectionPool(container.conninfo, min_size=2, max_size=container.settings.pg_pool_size,
                                   timeout=container.settings.pg_pool_timeout_seconds,
                                   connection_class=bounded_connection(AsyncBoundedConnection, statement_timeout),
                                   kwargs={"autocommit": True, **pool_connection_options(statement_timeout)},
                                   open=False)
        await pool.open(wait=True)
        # every blocking call of this process runs in these threads; a few keep the GIL from thrashing
        to_thread.current_default_thread_limiter().total_tokens = container.settings.api_threads
        container.queries = AsyncCatalogQueries(pool)
        container.history_queries = HistoryQueries(pool)
        container.event_queries = EventQueries(pool)
        container.users_roles_queries = UsersRolesQueries(pool)
        container.token_roles = TokenRoles(container.users_roles_queries.roles_of_ident,
                                           container.settings.authz_cache_seconds)
        container.tag_queries = TagQueries(pool)
        container.maintenance_policy_queries = MaintenancePolicyQueries(pool)
        container.task_queries = TaskQueries(pool)
        container.access_queries = AccessHistoryQueries(pool)
        container.metrics_report_queries = MetricsReportsQueries(pool)
        container.statistics_queries = StatisticsQueries(pool)
        calls: EndpointCalls = app.state.endpoint_calls
        app.state.flush_endpoint_calls = lambda: calls.flush(container.statistics_queries.add_calls)
        container.idempotent_responses = ResponseStore(
            pool, timedelta(minutes=container.settings.idempotency_key_lifetime_minutes), container.log.event_of,
            container.secrets.cipher)
        settings = container.settings
        app.state.readiness = ReadinessChecks(pool, [name for name, _ in sql_files()],
                                              [runner.name for runner in container.read_models_readiness_needs],
                                              settings.ready_max_lag_seconds, settings.nats_address,
                                              connect_options(settings))
        pools = asyncio.create_task(_observe_pools({"api": pool, "background": container.pool}))
        read_only = asyncio.create_task(follow(app.state.maintenance, container.queries.read_only))
        flushes = asyncio.create_task(flush_every(calls, container.statistics_queries.add_calls,
                                                  settings.endpoint_statistics_flush_seconds))
        try:
            yield
        finally:
            pools.cancel()
            flushes.cancel()
            read_only.cancel()
            # the last counts of this process, if the database answers at once: a stop of every process within 5 s
            # leaves no second to wait for a stalled one, nor for the cancellation of a statement it never answers
            # (the pool's close ends that); counts are telemetry
            last_counts = asyncio.create_task(app.state.flush_endpoint_calls())
            await asyncio.wait({last_counts}, timeout=POOL_CLOSE_SECONDS)
            await pool.close(timeout=POOL_CLOSE_SECONDS)
            if not last_counts.done():
                last_counts.cancel()
                await asyncio.wait({last_counts}, timeout=POOL_CLOSE_SECONDS)
            await container.authorizer.aclose()

    app = FastAPI(title="Lakeledger", version=__version__, lifespan=lifespan, default_response_class=JSONResponse,
                  description="An Apache Iceberg REST catalog whose source of truth is an append-only event log.")
    app.state.lakeledger = container
    app.state.keyed_locks = KeyedLocks()
    app.state.endpoint_calls = EndpointCalls()
    app.state.maintenance = MaintenanceMode(container.settings.maintenance_mode == "read-only")
    read_models = [runner.name for runner in container.read_models]
    app.state.database_metrics = DatabaseCollector(container.pool, read_models)
    identifiers.use_separator(container.settings.namespace_separator)
    # Routes match the raw path's segments (RequestContext); their parameters are unescaped by the convertor.
    identifiers.route_on_segments()
    errors.install(app)
    openapi.install(app)
    for router in (config.router, namespaces.router, tables.router, scan_planning.router, views.router, events.router,
                   signer.table_router):
        app.include_router(router, prefix="/catalog/v1")
        # Zero-config clients (uri = the server's root) find the same API at /v1.
        app.include_router(router, prefix="/v1", include_in_schema=False)
    # before management's /project/{project_id}, which would take /project/actions (/grants) for a project id
    app.include_router(actions.router)
    app.include_router(grants.router)
    app.include_router(management.router)
    app.include_router(maintenance.router)
    app.include_router(recycle_bin.router)
    app.include_router(generic_tables.router)
    app.include_router(search.router)
    app.include_router(protection.router)
    app.include_router(namespace_moves.router)
    app.include_router(history.router)
    app.include_router(signer.router)
    app.include_router(users.router)
    app.include_router(roles.router)
    app.include_router(tags.router)
    app.include_router(maintenance_policies.router)
    app.include_router(tasks.router)
    app.include_router(permissions.router)
    app.include_router(access_history.router)
    app.include_router(metrics_reports.router)
    app.include_router(statistics.router)
    app.include_router(storage_validation.router)
    app.include_router(operations.router)
    app.include_router(console.router)

    # innermost: a well-formed commit is answered here, inside the layers below, without routing
    app.add_middleware(FastCommitTable, container=container)
    app.add_middleware(RecordRoute)  # it sees the scope the router writes the matched route into
    app.add_middleware(IdempotentRequests, container=container)
    app.add_middleware(ReadOnlyPast)
    app.add_middleware(FastLoadTable, container=container)
    # reads the route RecordRoute (or the load fast path, which answers outside it) leaves: every load is counted
    app.add_middleware(CountEndpointCalls, calls=app.state.endpoint_calls)
    app.add_middleware(MaintenanceGate, mode=app.state.maintenance)  # inside authentication, outside every write
    if verifier:
        app.add_middleware(Authentication, verifier=verifier, users=container.users)
    app.add_middleware(RequestContext, max_body_bytes=container.settings.max_request_body_bytes)
    # outermost: every answer, the fast path's and refusals included, is compressed in this one place
    app.add_middleware(CompressedResponses, min_bytes=container.settings.compression_min_bytes)
    settings = container.settings
    if settings.metrics == "on" or settings.log_format == "json":
        app.add_middleware(ObservedRequests, count=settings.metrics == "on", log_requests=settings.log_format == "json")
    return app


async def _observe_pools(pools: dict) -> None:
    """The connection pools' gauges, every few seconds (a scrape may reach another process than this one)."""
    while True:
        observe_pools(pools)
        await asyncio.sleep(POOL_METRICS_SECONDS)
