"""The composition root: builds the event log, the read-model pools, the projections and the
services from settings, and hands them to the API and the workers."""

import logging

from psycopg_pool import ConnectionPool

from lakeledger.authz.authorizer import AllowAll
from lakeledger.authz.decisions import RememberedDecisions
from lakeledger.authz.setup import authorizer
from lakeledger.authz.token_roles import TokenRoles
from lakeledger.domain.project import DEFAULT_PROJECT_ID
from lakeledger.domain.provenance import SYSTEM, Provenance
from lakeledger.eventstore.log import EventLog
from lakeledger.eventstore.postgres_failures import BoundedConnection, bounded_connection, pool_connection_options
from lakeledger.eventstore.settings import PostgresSettings
from lakeledger.migrations import sql_files
from lakeledger.postgres import postgres_url
from lakeledger.projections.access_history import AccessHistoryProjection
from lakeledger.projections.access_history_queries import AccessHistoryQueries
from lakeledger.projections.authz_tuples import AuthzTuplesProjection
from lakeledger.projections.authz_tuples_runner import TupleProjectionRunner
from lakeledger.projections.catalog import CatalogProjection
from lakeledger.projections.catalog_queries import AsyncCatalogQueries, CatalogQueries
from lakeledger.projections.catalog_versions import CatalogVersionsProjection
from lakeledger.projections.driver import ProjectionDriver
from lakeledger.projections.events_queries import EventQueries
from lakeledger.projections.expiry_schedule import ExpirySchedule
from lakeledger.projections.history import HistoryProjection
from lakeledger.projections.history_queries import HistoryQueries
from lakeledger.projections.maintenance_policies import MaintenancePoliciesProjection
from lakeledger.projections.maintenance_policies_queries import MaintenancePolicyQueries
from lakeledger.projections.metrics_reports import DEFAULT_PER_TABLE, MetricsReportsProjection
from lakeledger.projections.metrics_reports_queries import MetricsReportsQueries
from lakeledger.projections.statistics_queries import StatisticsQueries
from lakeledger.projections.tags import TagsProjection
from lakeledger.projections.tags_queries import TagQueries
from lakeledger.projections.tasks import TasksProjection
from lakeledger.projections.tasks_queries import TaskQueries
from lakeledger.projections.users_roles import UsersRolesProjection
from lakeledger.projections.users_roles_queries import UsersRolesQueries
from lakeledger.secretstore import SecretStore
from lakeledger.services.access_history import HolderHistory
from lakeledger.services.approval import ApproveAll, ChangeApproval
from lakeledger.services.generic_tables import GenericTableService
from lakeledger.services.grants import GrantService
from lakeledger.services.maintenance_policies import MaintenancePolicyService
from lakeledger.services.managed_access import ManagedAccessService
from lakeledger.services.management import ManagementService
from lakeledger.services.metadata_files import MetadataFiles
from lakeledger.services.metrics_reports import MetricsReports
from lakeledger.services.namespace_moves import NamespaceMoves
from lakeledger.services.namespaces import NamespaceService
from lakeledger.services.protection import ProtectionService
from lakeledger.services.recycle_bin import RecycleBin
from lakeledger.services.remote_signing import RemoteSigning
from lakeledger.services.roles import RoleService
from lakeledger.services.storage_validation import StorageValidation
from lakeledger.services.table_access import TableAccess
from lakeledger.services.tables import TableService
from lakeledger.services.tags import TagService
from lakeledger.services.tasks import TaskService
from lakeledger.services.time_travel import TimeTravel
from lakeledger.services.unit_of_work import Ledger
from lakeledger.services.users import UserService
from lakeledger.services.views import ViewService
from lakeledger.settings import Settings
from lakeledger.storage import Storages
from lakeledger.storage.s3_sts import S3CredentialVendor

logger = logging.getLogger("lakeledger")

MIGRATION_LOCK = 727_274_001
POOL_CLOSE_SECONDS = 0.1


class Container:
    # The API's async read-model queries, opened with its event loop (lakeledger/api/app.py); absent in a process that
    # serves no API.
    queries: AsyncCatalogQueries
    history_queries: HistoryQueries
    event_queries: EventQueries
    users_roles_queries: UsersRolesQueries
    token_roles: TokenRoles
    tag_queries: TagQueries
    maintenance_policy_queries: MaintenancePolicyQueries
    task_queries: TaskQueries
    access_queries: AccessHistoryQueries
    metrics_report_queries: MetricsReportsQueries
    statistics_queries: StatisticsQueries

    def __init__(self, settings: Settings, url: str | None = None, statement_timeout_seconds: float | None = None):
        """``statement_timeout_seconds``: how long any statement of the pools may run (None: the setting; 0: no
        limit, for the commands whose statements are long by design: rebuild, replay)."""
        self.settings = settings
        if statement_timeout_seconds is None:
            statement_timeout_seconds = settings.pg_statement_timeout_seconds
        self.statement_timeout_seconds = statement_timeout_seconds
        self.postgres = PostgresSettings.from_url(url or postgres_url(settings))
        self.conninfo = self.postgres.conninfo()
        # who may do what (lakeledger/authz/); first, so that a backend that cannot be used stops us before anything
        # opens
        self.authorizer = authorizer(settings, self.conninfo)
        if not isinstance(self.authorizer, AllowAll):
            self.authorizer = RememberedDecisions(self.authorizer, settings.authz_cache_seconds)
        self.log = EventLog(self.postgres, pool_size=settings.pg_pool_size,
                            pool_timeout_seconds=settings.pg_pool_timeout_seconds,
                            statement_timeout_seconds=statement_timeout_seconds)
        self.pool = ConnectionPool(self.conninfo, min_size=1, max_size=settings.pg_pool_size, open=True,
                                   name="lakeledger-sync", timeout=settings.pg_pool_timeout_seconds,
                                   connection_class=bounded_connection(BoundedConnection, statement_timeout_seconds),
                                   kwargs=pool_connection_options(statement_timeout_seconds))
        self.catalog_view = ProjectionDriver(CatalogProjection(), self.log, self.pool)
        # caught up by the history API before it answers, not inside appends (``ProjectionDriver.caught_up``)
        self.history_view = ProjectionDriver(HistoryProjection(), self.log, self.pool)
        # advanced by the expiry worker before it looks for due timers (lakeledger/workers/expirer.py)
        self.expiry_schedule = ProjectionDriver(ExpirySchedule(), self.log, self.pool)
        # applied inside every append of a user or role event (lakeledger/services/users.py,
        # lakeledger/services/roles.py)
        self.users_roles_view = ProjectionDriver(UsersRolesProjection(), self.log, self.pool)
        # applied inside every append of a tag definition's events (lakeledger/services/tags.py)
        self.tags_view = ProjectionDriver(TagsProjection(), self.log, self.pool)
        # applied inside every append of a maintenance policy's events (lakeledger/services/maintenance_policies.py)
        self.maintenance_policies_view = ProjectionDriver(MaintenancePoliciesProjection(), self.log, self.pool)
        # the expiries and purges drops scheduled: caught up by the tasks API before it answers
        self.tasks_view = ProjectionDriver(TasksProjection(), self.log, self.pool)
        # who held which right when (grants, memberships, hierarchy with validity ranges): caught up by the
        # access-history and assignments endpoints before they answer
        self.access_history = ProjectionDriver(AccessHistoryProjection(settings.server_id), self.log, self.pool)
        # the catalog with validity ranges, for read-only past prefixes: brought up to the position a read asks for
        # (lakeledger/services/time_travel.py) and kept near the head by the workers
        self.catalog_versions = ProjectionDriver(CatalogVersionsProjection(), self.log, self.pool)
        # the scan and commit reports engines send, newest per table: caught up by the reports endpoint before it
        # answers, never inside an append (a report's request pays for its own event only)
        self.metrics_reports_view = ProjectionDriver(
            MetricsReportsProjection(settings.metrics_reports_per_table or DEFAULT_PER_TABLE), self.log, self.pool)
        # what `rebuild` replays
        self.read_models: tuple[ProjectionDriver, ...] = (
            self.catalog_view, self.history_view, self.expiry_schedule, self.users_roles_view, self.access_history,
            self.catalog_versions, self.tags_view, self.metrics_reports_view, self.maintenance_policies_view,
            self.tasks_view)
        for runner in self.read_models:
            runner.wait_seconds = settings.read_model_wait_seconds
        # what readiness waits for (lakeledger/operations/health.py, docs/read-models.md): the read models the catalog
        # API reads to answer correctly, and only those. The catalog (warehouses, namespaces, tables, views) is applied
        # inside every append, so it is behind only when events reached the log without it (an older version, a replay);
        # OpenFGA's tuples (below) decide what a caller may do. Users and roles are applied inside every append of a
        # user or role event, after what they had not applied: they never answer behind their own events (their position
        # passes the others' only when a worker moves it). The history, the access history, the catalog versions (time
        # travel) and the expiry schedule serve endpoints of their own, which answer 503 while theirs is stuck: a stuck
        # one is an alarm (lakeledger_projection_stuck), and taking every API process out of a load balancer for it
        # would turn that alarm into an outage.
        self.read_models_readiness_needs = [self.catalog_view]
        self.time_travel = TimeTravel(self.log, self.catalog_versions)
        self.approval: ChangeApproval = ApproveAll()
        if settings.change_approval_url:
            from lakeledger.services.http_approval import HttpApproval

            self.approval = HttpApproval(settings.change_approval_url, settings.change_approval_timeout_seconds)
        self.ledger = Ledger(self.log, self.catalog_view, CatalogQueries(self.pool), self.approval)
        # OpenFGA's tuples: written by the request that appends what changes them, before it answers. With allowall
        # there is no store to write; the projection stays where it was, so a later switch to openfga fills the
        # store from the log (a store it has not written to starts it over from the beginning).
        self.authz_tuples: TupleProjectionRunner | None = None
        if isinstance(self.authorizer, RememberedDecisions):  # the openfga backend's decisions (allowall has none)
            self.authz_tuples = TupleProjectionRunner(AuthzTuplesProjection(settings.server_id), self.log, self.pool,
                                                      self.authorizer)
            self.ledger.after_append.append(self.authz_tuples.follow)
            self.read_models += (self.authz_tuples,)
            self.read_models_readiness_needs.append(self.authz_tuples)
        self.files = MetadataFiles(settings.metadata_cache_entries, settings.metadata_cache_mb * 2**20)
        key = settings.pg_encryption_key.get_secret_value() if settings.pg_encryption_key else None
        self.secrets = SecretStore(self.pool, key)
        self.storages = Storages(self.secrets)
        self.signing = RemoteSigning(self.ledger, self.storages, self.secrets)
        self.table_access = TableAccess(self.storages, S3CredentialVendor(), self.signing, settings.base_uri,
                                        renewal_margin_seconds=settings.vended_credentials_renewal_margin_seconds)
        self.namespaces = NamespaceService(self.ledger, settings.max_namespace_depth)
        self.namespace_moves = NamespaceMoves(self.ledger, settings.max_namespace_depth)
        self.tables = TableService(self.ledger, self.files, self.storages)
        self.views = ViewService(self.ledger, self.files, self.storages)
        self.generic_tables = GenericTableService(self.ledger, self.files, self.storages)
        self.management = ManagementService(self.ledger, settings.server_id, self.secrets,
                                            (self.users_roles_view, self.tags_view))
        self.storage_validation = StorageValidation(self.ledger, self.secrets)
        self.recycle_bin = RecycleBin(self.ledger)
        self.protection = ProtectionService(self.ledger)
        self.managed_access = ManagedAccessService(self.ledger)
        self.users = UserService(self.ledger, self.users_roles_view)  # users.provision(principal) on each request
        self.roles = RoleService(self.ledger, self.users_roles_view)
        self.tags = TagService(self.ledger, self.tags_view, self.files, self.storages)
        self.maintenance_policies = MaintenancePolicyService(self.ledger, self.maintenance_policies_view)
        self.tasks = TaskService(self.ledger)
        self.grants = GrantService(self.ledger, self.roles, self.access_history)
        self.holder_history = HolderHistory(self.log, self.pool, self.access_history)
        self.metrics_reports = MetricsReports(self.ledger, self.metrics_reports_view,
                                              settings.metrics_reports_per_table)

    def start(self) -> None:
        """Makes sure the default project (and the default warehouse, when one is configured) exist;
        creating them is a recorded act of the system."""
        by = Provenance(SYSTEM, "startup")
        if self.settings.enable_default_project:
            self.management.ensure_default_project(by)
            if self.settings.default_warehouse:
                location = (self.settings.data_dir / "warehouses" / self.settings.default_warehouse).resolve()
                self.management.ensure_warehouse(DEFAULT_PROJECT_ID, self.settings.default_warehouse,
                                                 {"type": "file", "location": f"file://{location}"}, by)

    def close(self) -> None:
        self.authorizer.close()
        # bounded: a pool whose workers wait on a stalled database must not hold up the process's stop
        self.pool.close(timeout=POOL_CLOSE_SECONDS)
        self.log.close(timeout=POOL_CLOSE_SECONDS)


def migrate(settings: Settings, url: str | None = None) -> list[str]:
    """Creates the event table (owned by the eventsourcing library) and applies pending read-model
    migrations; safe to run again and from several processes at once."""
    import psycopg

    postgres = PostgresSettings.from_url(url or postgres_url(settings))
    applied: list[str] = []
    with psycopg.connect(postgres.conninfo(), autocommit=True) as conn:
        conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
        try:
            EventLog(postgres, create_table=True, pool_size=1).close()
            conn.execute("CREATE TABLE IF NOT EXISTS ll_schema_migrations ("
                         " name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())")
            done = {r[0] for r in conn.execute("SELECT name FROM ll_schema_migrations")}
            for name, sql in sql_files():
                if name in done:
                    continue
                with conn.transaction():
                    conn.execute(sql)
                    conn.execute("INSERT INTO ll_schema_migrations (name) VALUES (%s)", (name,))
                applied.append(name)
            for projection in ("catalog", "purger", "history", "expiry-schedule"):
                conn.execute("INSERT INTO ll_projection_positions (name, position) VALUES (%s, 0)"
                             " ON CONFLICT (name) DO NOTHING", (projection,))
            if settings.authz_backend == "openfga":
                from lakeledger.authz.setup import set_up_openfga

                openfga = set_up_openfga(conn, settings)
                if openfga.created_store:
                    applied.append(f"OpenFGA store {settings.openfga.store_name} ({openfga.store_id})")
                if openfga.wrote_model:
                    applied.append(f"OpenFGA authorization model {openfga.model_id}")
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))
    return applied
