"""Every setting, read from ``LAKELEDGER__*`` environment variables (documented in docs/configuration.md)."""

import re
from pathlib import Path
from typing import Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from lakeledger.domain.names import DEFAULT_NAMESPACE_DEPTH, MAX_NAMESPACE_DEPTH
from lakeledger.secretstore.cipher import MIN_KEY_LENGTH


class OpenFgaSettings(BaseModel):
    """``LAKELEDGER__OPENFGA__*``: where OpenFGA is and which store this installation uses."""

    endpoint: str | None = Field(default=None, pattern=r"^https?://")
    # what OpenFGA accepts as a store name
    store_name: str = Field(default="lakeledger", pattern=r"^[a-zA-Z0-9\s.\-/^_&@]{3,64}$")
    # a pre-shared key OpenFGA was started with (--authn-method preshared)
    api_key: SecretStr | None = None


class UiSettings(BaseModel):
    """``LAKELEDGER__UI__*``: how the web console signs people in with the OpenID provider (authorization code with
    PKCE, a public client), as Lakekeeper's ``LAKEKEEPER__UI__*``."""

    # the public client registered for the console at the provider; its redirect URI is <this server>/ui
    openid_client_id: str = "lakeledger-console"
    openid_scope: str = "openid"
    # a resource indicator (RFC 8707) for providers that need one to issue tokens for the catalog's audience
    openid_resource: str | None = None
    # where browsers reach the provider, when it differs from LAKELEDGER__OPENID_PROVIDER_URI (e.g. behind a proxy)
    openid_provider_uri: str | None = Field(default=None, pattern=r"^https?://")


# an identity provider's id prefixes its users' ids (<idp>~<subject>), as Lakekeeper's; these two are Lakekeeper's own
# (the single provider of LAKELEDGER__OPENID_PROVIDER_URI, and Kubernetes service accounts)
RESERVED_PROVIDER_IDS = ("oidc", "kubernetes")


class OpenIdProviderSettings(BaseModel):
    """One of ``LAKELEDGER__OPENID_PROVIDERS``: an OpenID provider besides (or instead of) the single one of
    ``LAKELEDGER__OPENID_PROVIDER_URI``, with the fields of Lakekeeper's ``LAKEKEEPER__OPENID_PROVIDERS__<ID>__*``.
    Lists are comma lists or JSON arrays. A field of Lakekeeper's this server does not apply (``scope``,
    ``display_name_template``) is refused rather than ignored."""

    model_config = ConfigDict(extra="forbid")

    uri: str = Field(pattern=r"^https?://")
    audience: str | list[str] | None = None
    additional_issuers: str | list[str] | None = None
    # Lakekeeper's default for these providers: Entra ID's stable `oid` when present, else `sub`
    subject_claims: str | list[str] = "oid,sub"
    # where the token lists the caller's roles (dots walk into objects: realm_access.roles)
    roles_claim: str | None = Field(default=None, min_length=1)
    # false: a provider down at start-up does not stop the server; its tokens are answered 503 until it is back
    require_connected_on_startup: bool = True


class Settings(BaseSettings):
    # nested settings (LAKELEDGER__OPENFGA__ENDPOINT) split on "__" after the prefix; no flat name contains "__"
    model_config = SettingsConfigDict(env_prefix="LAKELEDGER__", env_nested_delimiter="__", case_sensitive=False,
                                      extra="ignore")

    data_dir: Path = Field(default=Path("./.lakeledger"))
    pg_url: str | None = None
    pg_pool_size: int = Field(default=10, ge=1)
    # how long a request waits for a connection of the pool (all busy, or Postgres unreachable) before a 503
    pg_pool_timeout_seconds: float = Field(default=10.0, gt=0)
    # the longest a statement of `serve` or `workers` may run before Postgres ends it (a 503); 0: no limit.
    # `migrate`, `rebuild` and `replay` are not bounded (docs/postgres-failures.md)
    pg_statement_timeout_seconds: float = Field(default=30.0, ge=0)
    listen_host: str = "0.0.0.0"
    listen_port: int = Field(default=8181, ge=0, le=65535)
    # API processes serving the port (lakeledger/api_processes.py): about one per core
    api_processes: int = Field(default=1, ge=1, le=64)
    # threads of each API process for blocking work (commits, storage calls): few, so Python's GIL does not thrash
    api_threads: int = Field(default=8, ge=1, le=256)
    # set by a serve for the API processes it starts: the socket pair end its connections come down (not for users)
    connections_fd: int | None = None
    workers: Literal["on", "off"] = "on"
    server_id: UUID = UUID(int=0)
    enable_default_project: bool = True
    default_warehouse: str | None = None
    max_request_body_bytes: int = Field(default=16 * 1024 * 1024, ge=1024)
    metadata_cache_entries: int = Field(default=4096, ge=16)
    # and at most this much memory (estimated: the files, their parsed form, rendered answers)
    metadata_cache_mb: int = Field(default=32, ge=1)
    # JSON answers this large or larger are compressed for clients that accept gzip or zstd
    compression_min_bytes: int = Field(default=1024, ge=0)
    auto_migrate: bool = True
    log_level: str = "info"
    # text: a line for people; json: one JSON object per line, and one per request (lakeledger/operations/logs.py)
    log_format: Literal["text", "json"] = "text"
    # /health/ready answers 503 while a read model is further behind the log than this (its oldest unapplied event)
    ready_max_lag_seconds: float = Field(default=60.0, gt=0)
    # off: requests are not counted or timed (what /metrics reads from the database stays)
    metrics: Literal["on", "off"] = "on"
    # read-only: the API refuses every write (503, Retry-After) from the start, whatever the log's switch says
    maintenance_mode: Literal["off", "read-only"] = "off"
    # how often an API process adds the calls it counted to the endpoint statistics (one statement a flush)
    endpoint_statistics_flush_seconds: float = Field(default=10.0, gt=0)
    # `lakeledger workers` serves its Prometheus metrics on this port (serve's are at /metrics on the API port)
    metrics_port: int | None = Field(default=None, ge=1, le=65535)
    namespace_separator: str = Field(default="%1F", min_length=1)
    # how deep a new namespace may be (Lakekeeper's 5 by default); any path may name up to MAX_NAMESPACE_DEPTH
    max_namespace_depth: int = Field(default=DEFAULT_NAMESPACE_DEPTH, ge=1, le=MAX_NAMESPACE_DEPTH)
    default_page_size: int = Field(default=100, ge=1)
    max_page_size: int = Field(default=1000, ge=1)
    idempotency_key_lifetime_minutes: int = Field(default=30, ge=1)
    # what loadTable's config and /config tell clients: plan scans themselves ("client") or through planTableScan
    scan_planning_mode: Literal["client", "server"] = "client"
    # a plan of more data manifests than this answers plan tasks of this many each instead of its file scan tasks
    scan_planning_manifests_per_task: int = Field(default=100, ge=1)
    # a plan of more data manifests than this answers "submitted" (0: never; pyiceberg 0.12 cannot poll)
    scan_planning_submit_above_manifests: int = Field(default=0, ge=0)
    # workers are woken by NOTIFY and their own timers; this is only how often they look anyway
    worker_poll_seconds: float = Field(default=30.0, gt=0)
    # after a wake-up, how long the background read models gather appends before each takes a pass over them
    worker_batch_seconds: float = Field(default=0.25, ge=0, le=10)
    # a request needing a read model another process is applying (history, access history, the catalog's past)
    # waits this long, then answers 503
    read_model_wait_seconds: float = Field(default=60.0, gt=0)
    # from this many events in the log, `rebuild` fills the history in a process of its own (0: always)
    rebuild_apart_from_events: int = Field(default=100_000, ge=0)
    # the metrics reports (scan, commit) the read model keeps per table, newest first; 0: checked, not kept
    metrics_reports_per_table: int = Field(default=1000, ge=0)
    nats_address: str | None = None
    nats_stream: str = Field(default="LAKELEDGER", pattern=r"^[A-Za-z0-9_-]+$")
    nats_subject: str = Field(default="lakeledger", pattern=r"^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$")
    nats_duplicate_window_seconds: int = Field(default=3600, ge=60)
    # NATS authentication, as the server requires: user and password, a token, or a credentials file (JWT + nkey)
    nats_user: str | None = None
    nats_password: SecretStr | None = None
    nats_token: SecretStr | None = None
    nats_creds_file: Path | None = None
    # CloudEvents to Kafka (lakeledger/workers/kafka_publisher.py), as Lakekeeper's LAKEKEEPER__KAFKA_*: the topic,
    # librdkafka's properties as a JSON object (bootstrap.servers, security.protocol, sasl.*, ...) or a JSON file of
    # them
    kafka_topic: str | None = Field(default=None, pattern=r"^[A-Za-z0-9._-]{1,249}$")
    kafka_config: dict[str, str | int | float | bool] | None = None
    kafka_config_file: Path | None = None
    # the transactional id of the publisher (default lakeledger-<server id>); one publisher of an id runs at a time
    kafka_transactional_id: str | None = None
    change_approval_url: str | None = None
    change_approval_timeout_seconds: float = Field(default=5.0, gt=0)
    purge_max_files_per_second: float = Field(default=0, ge=0)
    # a failed purge is tried again after this long, the pause doubling each time up to an hour
    purge_retry_seconds: float = Field(default=60.0, gt=0)
    # table maintenance on Spark (lakeledger/maintenance/, docs/table-maintenance.md): off runs no scheduler and no jobs
    maintenance: Literal["on", "off"] = "on"
    # where the jobs run: any master spark-submit accepts (local[N] on this machine, spark://host:7077 a cluster)
    spark_master: str = "local[2]"
    # more Spark settings for the jobs, a JSON object: spark.jars or spark.jars.packages, executor memory, ...
    spark_conf: dict[str, str] = Field(default_factory=dict)
    # the Python that runs a job (pyspark installed: the `spark` extra); default: the one running Lakeledger
    spark_python: str | None = None
    # the catalog the jobs commit through; default http://127.0.0.1:<listen port>/catalog
    maintenance_catalog_uri: str | None = None
    # with OpenID Connect on: the client credentials (client-id:secret) the jobs take tokens with, the token endpoint
    # (default: the provider's own, by discovery) and the scope
    maintenance_credential: SecretStr | None = None
    maintenance_oauth2_server_uri: str | None = None
    maintenance_scope: str | None = None
    # how often tables with an enabled policy are looked at (each action no more often than its schedule-interval)
    maintenance_check_seconds: float = Field(default=60.0, gt=0)
    maintenance_job_timeout_seconds: float = Field(default=3600.0, gt=0)
    # a failed job is tried again after this long, doubling each time up to an hour, at most this many attempts
    maintenance_retry_seconds: float = Field(default=60.0, gt=0)
    maintenance_max_attempts: int = Field(default=5, ge=1, le=100)
    # encrypts storage credentials at rest (lakeledger/secretstore/); without it, warehouses that need one are refused
    pg_encryption_key: SecretStr | None = None
    # the address clients reach this server at, for the URLs it hands out (the S3 signer); default: the request's
    base_uri: str | None = None
    # vended credentials are said to expire this many seconds before they do, so engines renew them that much sooner
    # through the table's refresh endpoint; less than the shortest validity a warehouse vends (STS: 900 s)
    vended_credentials_renewal_margin_seconds: int = Field(default=0, ge=0, lt=900)
    # who may do what: allowall (every caller may do everything) or openfga (LAKELEDGER__OPENFGA__*)
    authz_backend: Literal["allowall", "openfga"] = "allowall"
    openfga: OpenFgaSettings = Field(default_factory=OpenFgaSettings)
    # how long an allow or deny of the backend is remembered per process (lakeledger/authz/decisions.py); 0: ask every
    # time
    authz_cache_seconds: float = Field(default=2.0, ge=0, le=60)
    # allowall with an OpenID provider: every authenticated caller may do everything; refused unless asked for
    authz_allowall_with_openid: bool = False
    # OpenID Connect (lakeledger/identity/oidc.py): set, every request but /health needs a bearer token from this issuer
    openid_provider_uri: str | None = None
    # comma lists: tokens must name one of these audiences; more issuers trusted with the provider's keys; the
    # claims the subject is taken from, first present wins
    openid_audience: str | None = None
    openid_additional_issuers: str | None = None
    openid_subject_claim: str = Field(default="sub", min_length=1)
    # the claim listing the caller's roles in the provider's tokens (lakeledger/identity/claims.py)
    openid_roles_claim: str | None = Field(default=None, min_length=1)
    # more providers, keyed by the id that prefixes their users' ids: LAKELEDGER__OPENID_PROVIDERS__OKTA__URI=... or
    # LAKELEDGER__OPENID_PROVIDERS='{"okta": {"uri": ...}}'
    openid_providers: dict[str, OpenIdProviderSettings] = Field(default_factory=dict)
    ui: UiSettings = Field(default_factory=UiSettings)

    @field_validator("pg_encryption_key")
    @classmethod
    def _key_long_enough(cls, value: SecretStr | None) -> SecretStr | None:
        # checked here, before anything starts, so that a short key is a message and not a failed start-up
        if value is not None and len(value.get_secret_value()) < MIN_KEY_LENGTH:
            raise ValueError(f"must be at least {MIN_KEY_LENGTH} characters")
        return value

    @field_validator("openid_providers")
    @classmethod
    def _provider_ids(cls, value: dict[str, OpenIdProviderSettings]) -> dict[str, OpenIdProviderSettings]:
        for idp_id in value:
            if not re.fullmatch(r"[a-z0-9-]+", idp_id):
                raise ValueError(f"provider id {idp_id!r} must be lowercase letters, digits and '-'")
            if idp_id in RESERVED_PROVIDER_IDS:
                raise ValueError(f"provider id {idp_id!r} is reserved")
        return value

    @property
    def openid_configured(self) -> bool:
        """True when any OpenID provider is set: requests then need a bearer token."""
        return bool(self.openid_provider_uri or self.openid_providers)

    @model_validator(mode="after")
    def _one_nats_authentication(self):
        ways = [name for name, given in (("NATS_USER", self.nats_user or self.nats_password),
                                         ("NATS_TOKEN", self.nats_token), ("NATS_CREDS_FILE", self.nats_creds_file))
                if given]
        if len(ways) > 1:
            raise ValueError(f"set one NATS authentication, not {' and '.join('LAKELEDGER__' + w for w in ways)}")
        if bool(self.nats_user) != bool(self.nats_password):
            raise ValueError("LAKELEDGER__NATS_USER and LAKELEDGER__NATS_PASSWORD go together")
        if self.nats_creds_file is not None and not self.nats_creds_file.is_file():
            raise ValueError(f"LAKELEDGER__NATS_CREDS_FILE {self.nats_creds_file} is not a readable file")
        return self

    @model_validator(mode="after")
    def _kafka_has_a_broker(self):
        if self.kafka_topic is None:
            return self
        if self.kafka_config_file is not None:
            import json

            try:
                loaded = json.loads(self.kafka_config_file.read_text())
            except (OSError, ValueError) as e:
                raise ValueError(
                    f"LAKELEDGER__KAFKA_CONFIG_FILE {self.kafka_config_file}: {type(e).__name__}"
                ) from None
            if not isinstance(loaded, dict):
                raise ValueError("LAKELEDGER__KAFKA_CONFIG_FILE must hold a JSON object of librdkafka properties")
            self.kafka_config = {**loaded, **(self.kafka_config or {})}
        if not (self.kafka_config or {}).get("bootstrap.servers"):
            raise ValueError("LAKELEDGER__KAFKA_TOPIC needs bootstrap.servers in LAKELEDGER__KAFKA_CONFIG (a JSON "
                             "object of librdkafka properties) or LAKELEDGER__KAFKA_CONFIG_FILE")
        return self

    @model_validator(mode="after")
    def _openfga_has_an_endpoint(self):
        if self.authz_backend == "openfga" and not self.openfga.endpoint:
            raise ValueError("LAKELEDGER__AUTHZ_BACKEND=openfga needs LAKELEDGER__OPENFGA__ENDPOINT "
                             "(e.g. http://localhost:8080)")
        return self


def variable_names(model: type[BaseModel] = Settings, prefix: str = "LAKELEDGER__") -> list[str]:
    """Every environment variable the settings read, nested ones field by field (``LAKELEDGER__OPENFGA__ENDPOINT``)."""
    names: list[str] = []
    for name, field in model.model_fields.items():
        kind = field.annotation
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            names += variable_names(kind, f"{prefix}{name.upper()}__")
        else:
            names.append(f"{prefix}{name.upper()}")
    return names
