"""What tables, views and generic tables have in common: a name in a namespace (one name space for both), a
location, a pointer to the current metadata file, and their whole life after a drop: soft or final,
undropped, expired, purged, and protected from drops."""

from datetime import datetime
from uuid import UUID

from eventsourcing.domain import event

from lakeledger.domain.base import CatalogAggregate
from lakeledger.domain.deletion import DeletionState
from lakeledger.domain.errors import AlreadyExists, NotFound
from lakeledger.domain.json_types import JsonObject
from lakeledger.domain.names import dotted
from lakeledger.domain.provenance import Provenance

TABLE = "table"
VIEW = "view"
# Lakekeeper's non-Iceberg table (Lance, Delta, a Parquet folder): its API's and management API's word for it
GENERIC_TABLE = "generic-table"


class Tabular(CatalogAggregate):
    kind = "tabular"
    word = "Tabular"  # the kind in messages and name claims (unannotated, as not_found)
    not_found = NotFound  # unannotated: eventsourcing would take an annotation for an event field

    class Created(CatalogAggregate.Created):
        warehouse_id: UUID
        namespace_id: UUID
        namespace: list[str]
        name: str
        location: str
        metadata_location: str

    class Renamed(CatalogAggregate.Event):
        typ: str
        from_namespace_id: UUID
        from_namespace: list[str]
        from_name: str
        to_namespace_id: UUID
        to_namespace: list[str]
        to_name: str

    class Moved(CatalogAggregate.Event):
        """Its namespace moved (lakeledger/domain/namespace.py, ``Namespace.Moved``): the same namespace, the same
        name and location, under the namespace's new path. ``with_namespace``: the namespace the move named."""

        typ: str
        warehouse_id: UUID
        namespace_id: UUID
        from_namespace: list[str]
        to_namespace: list[str]
        with_namespace: UUID

    class Dropped(CatalogAggregate.Event):
        """The drop records what undrop and purge need to know. Version 2 added the soft deletion: a drop
        with ``expires_at`` can be undone until then; one without is final. Version 1 drops were final."""

        class_version = 2

        typ: str
        warehouse_id: UUID
        namespace_id: UUID
        namespace: list[str]
        name: str
        location: str
        metadata_location: str
        purge_requested: bool
        expires_at: datetime | None
        with_namespace: UUID | None

        @staticmethod
        def upcast_v1_v2(state: JsonObject) -> None:
            state["expires_at"] = None
            state["with_namespace"] = None

    class Undropped(CatalogAggregate.Event):
        typ: str
        warehouse_id: UUID
        namespace_id: UUID
        namespace: list[str]
        name: str

    class Expired(CatalogAggregate.Event):
        """A soft drop became final: the object is gone for good, and its files are purged if the drop asked."""

        typ: str
        warehouse_id: UUID
        location: str
        purge_requested: bool

    class Purged(CatalogAggregate.Event):
        typ: str
        location: str
        files_removed: int

    class ProtectionSet(CatalogAggregate.Event):
        typ: str
        protected: bool

    class ExpiryRescheduled(CatalogAggregate.Event):
        """A task control moved a soft drop's expiry (run-now: to the moment it was asked) or cancelled it
        (``expires_at`` None): the object then stays soft-deleted, restorable, and no timer fires for it."""

        typ: str
        warehouse_id: UUID
        expires_at: datetime | None

    class PurgeCancelled(CatalogAggregate.Event):
        """The drop's purge will not run: the files stay where they are."""

        typ: str
        warehouse_id: UUID

    class PurgeRetryDue(CatalogAggregate.Event):
        """A failed purge waiting for its retry is to be tried again at once (run-now)."""

        typ: str
        warehouse_id: UUID

    class PurgeStarted(CatalogAggregate.Event):
        """The purge worker took the drop's purge, after its claim (the purger's place in the log, or a failed
        purge's row held ``FOR UPDATE SKIP LOCKED``): attempt ``attempt`` (1 for the first) by ``worker`` (host and
        process). ``abandoned`` names an attempt that started before and never ended: its worker died mid-purge."""

        typ: str
        warehouse_id: UUID
        attempt: int
        worker: str
        abandoned: int | None

    class PurgeFailed(CatalogAggregate.Event):
        """A purge attempt failed (its storage unreachable, its credential refused); it is tried again at
        ``retry_at``. ``error`` is the exception's type and message, bounded and with URLs' query strings cut."""

        typ: str
        warehouse_id: UUID
        attempt: int
        error: str
        retry_at: datetime

    def _init_tabular(self, warehouse_id: UUID, namespace_id: UUID, namespace: list[str], name: str, location: str,
                      metadata_location: str) -> None:
        self.warehouse_id = warehouse_id
        self.namespace_id = namespace_id
        self.namespace = list(namespace)
        self.name = name
        self.location = location
        self.metadata_location = metadata_location
        self.purge_requested = False
        self.purged = False
        self.purge_attempts = 0  # purge attempts started
        self.purge_running: int | None = None  # the attempt started and not ended yet
        self.deletion = DeletionState(protected=getattr(self, "deletion", DeletionState()).protected)

    @property
    def dropped(self) -> bool:
        return self.deletion.dropped

    @property
    def identifier(self) -> str:
        return dotted([*self.namespace, self.name])

    def ensure_live(self) -> None:
        if self.dropped:
            raise self.not_found(f"{self.word} does not exist: {self.identifier}")

    def ensure_registrable(self) -> None:
        """A tabular the catalog knows can be registered again from one of its own metadata files only once it is
        dropped for good, and only if its files were kept."""
        word = self.word.lower()
        if not self.dropped:
            raise AlreadyExists(f"A {word} with uuid {self.id} is already registered: {self.identifier}")
        if self.deletion.soft_dropped:
            raise AlreadyExists(f"The {word} with uuid {self.id} is soft-deleted; undrop it instead of registering it")
        if self.purge_requested:
            # its files are being deleted by the purge worker; registering them again would race it
            raise AlreadyExists(f"The {word} with uuid {self.id} was dropped with purge and cannot be registered "
                                "again")

    def rename(self, to_namespace_id: UUID, to_namespace: tuple[str, ...], to_name: str, by: Provenance) -> None:
        self.ensure_live()
        self._renamed(typ=self.kind, from_namespace_id=self.namespace_id, from_namespace=self.namespace,
                      from_name=self.name,
                      to_namespace_id=to_namespace_id, to_namespace=list(to_namespace), to_name=to_name,
                      actor=by.actor, request_id=by.request_id)

    def namespace_moved(self, to_namespace: tuple[str, ...], with_namespace: UUID, by: Provenance) -> None:
        """Its namespace is now at ``to_namespace``; live or soft-dropped alike (an undrop brings it back there)."""
        self._moved(typ=self.kind, warehouse_id=self.warehouse_id, namespace_id=self.namespace_id,
                    from_namespace=self.namespace, to_namespace=list(to_namespace), with_namespace=with_namespace,
                    actor=by.actor, request_id=by.request_id)

    def drop(self, purge_requested: bool, expires_at: datetime | None, force: bool, by: Provenance,
             with_namespace: UUID | None = None) -> None:
        """Soft when ``expires_at`` is given (restorable until then), final otherwise."""
        self.ensure_live()
        self.deletion.check_droppable(self.kind, self.identifier, force)
        self._dropped(typ=self.kind, warehouse_id=self.warehouse_id, namespace_id=self.namespace_id,
                      namespace=self.namespace,
                      name=self.name, location=self.location, metadata_location=self.metadata_location,
                      purge_requested=purge_requested, expires_at=expires_at, with_namespace=with_namespace,
                      actor=by.actor, request_id=by.request_id)

    def undrop(self, namespace_id: UUID, namespace: tuple[str, ...], now: datetime, by: Provenance) -> None:
        self.deletion.check_restorable(self.kind, f"{self.identifier} ({self.id})", now)
        self._undropped(typ=self.kind, warehouse_id=self.warehouse_id, namespace_id=namespace_id,
                        namespace=list(namespace), name=self.name, actor=by.actor, request_id=by.request_id)

    def expire(self, now: datetime, by: Provenance) -> bool:
        """Makes a due soft drop final; False (and nothing recorded) when it is not due: undropped, already
        final, or not yet expired. That is what lets any number of workers fire one timer."""
        if not self.deletion.is_due(now):
            return False
        self._expired(typ=self.kind, warehouse_id=self.warehouse_id, location=self.location,
                      purge_requested=self.purge_requested, actor=by.actor, request_id=by.request_id)
        return True

    @property
    def awaits_purge(self) -> bool:
        return self.deletion.deleted and self.purge_requested and not self.purged

    def record_purge(self, files_removed: int, by: Provenance) -> bool:
        if not self.awaits_purge:
            return False
        self._purged(typ=self.kind, location=self.location, files_removed=files_removed,
                     actor=by.actor, request_id=by.request_id)
        return True

    def start_purge(self, worker: str, by: Provenance) -> int:
        """Records that ``worker`` starts the next purge attempt (the caller holds the claim); returns its number."""
        attempt = getattr(self, "purge_attempts", 0) + 1
        self._purge_started(typ=self.kind, warehouse_id=self.warehouse_id, attempt=attempt, worker=worker,
                            abandoned=getattr(self, "purge_running", None), actor=by.actor, request_id=by.request_id)
        return attempt

    def fail_purge(self, attempt: int, error: str, retry_at: datetime, by: Provenance) -> None:
        self._purge_failed(typ=self.kind, warehouse_id=self.warehouse_id, attempt=attempt, error=error,
                           retry_at=retry_at, actor=by.actor, request_id=by.request_id)

    @property
    def expiry_pending(self) -> bool:
        """Soft-dropped with a timer set: an expiry task is scheduled."""
        return self.deletion.soft_dropped and self.deletion.expires_at is not None

    @property
    def purge_pending(self) -> bool:
        """A purge is asked and not done yet: waiting for the expiry, or for the purge worker."""
        return self.dropped and self.purge_requested and not self.purged

    def reschedule_expiry(self, expires_at: datetime | None, by: Provenance) -> bool:
        """Moves (or, with None, cancels) a scheduled expiry; False (nothing recorded) when none is scheduled."""
        if not self.expiry_pending:
            return False
        self._expiry_rescheduled(typ=self.kind, warehouse_id=self.warehouse_id, expires_at=expires_at,
                                 actor=by.actor, request_id=by.request_id)
        return True

    def cancel_purge(self, by: Provenance) -> bool:
        if not self.purge_pending:
            return False
        self._purge_cancelled(typ=self.kind, warehouse_id=self.warehouse_id, actor=by.actor,
                              request_id=by.request_id)
        return True

    def purge_now(self, now: datetime, by: Provenance) -> bool:
        """Runs a pending purge at once: one waiting for its soft drop's expiry expires now (the purge follows the
        expiry), one waiting for a retry is due now. False when no purge is pending."""
        if not self.purge_pending:
            return False
        if self.expiry_pending:
            return self.reschedule_expiry(now, by)
        if not self.deletion.deleted:
            return False  # soft-dropped with its expiry cancelled: the purge waits for a final drop
        self._purge_retry_due(typ=self.kind, warehouse_id=self.warehouse_id, actor=by.actor,
                              request_id=by.request_id)
        return True

    def set_protection(self, protected: bool, by: Provenance) -> None:
        self.ensure_live()
        if self.deletion.protection_changes(protected):
            self._protection_set(typ=self.kind, protected=protected, actor=by.actor, request_id=by.request_id)

    @property
    def protected(self) -> bool:
        return self.deletion.protected

    @event(Renamed)
    def _renamed(self, typ: str, from_namespace_id: UUID, from_namespace: list[str], from_name: str,
                 to_namespace_id: UUID, to_namespace: list[str], to_name: str, actor: str, request_id: str) -> None:
        self.namespace_id = to_namespace_id
        self.namespace = list(to_namespace)
        self.name = to_name

    @event(Moved)
    def _moved(self, typ: str, warehouse_id: UUID, namespace_id: UUID, from_namespace: list[str],
               to_namespace: list[str], with_namespace: UUID, actor: str, request_id: str) -> None:
        self.namespace = list(to_namespace)

    @event(Dropped)
    def _dropped(self, typ: str, warehouse_id: UUID, namespace_id: UUID, namespace: list[str], name: str, location: str,
                 metadata_location: str, purge_requested: bool, expires_at: datetime | None,
                 with_namespace: UUID | None, actor: str, request_id: str) -> None:
        self.deletion.drop(expires_at, with_namespace)
        self.purge_requested = purge_requested

    @event(Undropped)
    def _undropped(self, typ: str, warehouse_id: UUID, namespace_id: UUID, namespace: list[str], name: str, actor: str,
                   request_id: str) -> None:
        self.deletion.restore()
        self.namespace_id, self.namespace = namespace_id, list(namespace)
        self.purge_requested = False

    @event(Expired)
    def _expired(self, typ: str, warehouse_id: UUID, location: str, purge_requested: bool, actor: str,
                 request_id: str) -> None:
        self.deletion.expire()

    @event(Purged)
    def _purged(self, typ: str, location: str, files_removed: int, actor: str, request_id: str) -> None:
        self.purged = True
        self.purge_running = None

    @event(PurgeStarted)
    def _purge_started(self, typ: str, warehouse_id: UUID, attempt: int, worker: str, abandoned: int | None,
                       actor: str, request_id: str) -> None:
        self.purge_attempts = attempt
        self.purge_running = attempt

    @event(PurgeFailed)
    def _purge_failed(self, typ: str, warehouse_id: UUID, attempt: int, error: str, retry_at: datetime, actor: str,
                      request_id: str) -> None:
        self.purge_running = None

    @event(ExpiryRescheduled)
    def _expiry_rescheduled(self, typ: str, warehouse_id: UUID, expires_at: datetime | None, actor: str,
                            request_id: str) -> None:
        self.deletion.expires_at = expires_at

    @event(PurgeCancelled)
    def _purge_cancelled(self, typ: str, warehouse_id: UUID, actor: str, request_id: str) -> None:
        self.purge_requested = False

    @event(PurgeRetryDue)
    def _purge_retry_due(self, typ: str, warehouse_id: UUID, actor: str, request_id: str) -> None:
        pass

    @event(ProtectionSet)
    def _protection_set(self, typ: str, protected: bool, actor: str, request_id: str) -> None:
        self.deletion.protected = protected
