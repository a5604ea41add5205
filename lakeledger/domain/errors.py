"""Domain errors. Each one names what went wrong in the catalog's own terms; the API maps them to
the Iceberg ErrorModel ``type`` names that the Java client understands."""


class CatalogError(Exception):
    """Base of every refusal the catalog makes on purpose."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class BadRequest(CatalogError):
    pass


class InvalidArgument(BadRequest):
    """An argument the catalog cannot accept (a malformed schema, an update the metadata cannot take): what
    Iceberg's reference server answers as IllegalArgumentException, so Java clients raise the same exception."""


class ImmutableProperty(BadRequest):
    """A commit that would change or remove a table property that may only be set once (Lakekeeper's types:
    ImmutablePropertyModification, ImmutablePropertyRemoval)."""

    def __init__(self, error_type: str, message: str):
        super().__init__(message)
        self.error_type = error_type


class NamespaceDepthExceeded(BadRequest):
    """A new namespace deeper than LAKELEDGER__MAX_NAMESPACE_DEPTH allows (Lakekeeper's type and status)."""

    error_type = "NamespaceDepthExceeded"


class UnprocessableEntity(CatalogError):
    """A well-formed request that contradicts itself (a property both updated and removed): the REST spec's 422."""


class NotFound(CatalogError):
    pass


class NoSuchProject(NotFound):
    pass


class NoSuchWarehouse(NotFound):
    pass


class NoSuchNamespace(NotFound):
    pass


class NoSuchTable(NotFound):
    pass


class NoSuchView(NotFound):
    pass


class NoSuchGenericTable(NotFound):
    pass


class NoSuchPlanId(NotFound):
    """A scan plan id not issued for this table, or whose snapshot the table no longer has."""


class NoSuchPlanTask(NotFound):
    pass


class AlreadyExists(CatalogError):
    pass


class InUse(CatalogError):
    """Something still refers to what a request would remove (a tag definition still attached)."""


class NamespaceNotEmpty(CatalogError):
    pass


class WarehouseNotEmpty(CatalogError):
    pass


class WarehouseManaged(CatalogError):
    """A change to the settings of a warehouse managed by the instance's admins, by someone else (Lakekeeper's 403
    ``WarehouseManaged``)."""


class ProjectNotEmpty(CatalogError):
    """A project that still holds warehouses cannot be deleted (Lakekeeper's 409 ``ProjectNotEmpty``)."""


class WarehouseInactive(CatalogError):
    pass


class AlreadyBootstrapped(CatalogError):
    pass


class CommitFailed(CatalogError):
    pass


class Unsupported(CatalogError):
    pass


class RequestAlreadyApplied(CatalogError):
    """A retry of a request whose change is already in the log (same Idempotency-Key)."""


class Protected(CatalogError):
    """A protected warehouse, namespace, table or view, dropped without ``force``."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.error_type = f"{kind.capitalize()}Protected"


class UnfinishedDeletions(CatalogError):
    """A warehouse still has soft-deleted tables or views waiting for expiry, or purges not yet done."""


class ChangeRefused(CatalogError):
    """The change-approval hook said no; the message carries its reason."""


class ChangeApprovalUnavailable(CatalogError):
    """The change-approval hook could not be asked; nothing was changed."""


class CatchingUp(CatalogError):
    """A read model the answer needs is still being brought up to the log by another process (after an upgrade,
    a long log to replay); asking again later will succeed."""


class ReadModelStuck(CatchingUp):
    """A read model cannot advance: its writer fails on an event of the log (a bug, or a table changed behind its
    back). The rest of the catalog goes on; the read model catches up by itself once the cause is gone."""

    def __init__(self, read_model: str, position: int, event_type: str, error: str):
        super().__init__(f"The {read_model} read model cannot apply the event at position {position} ({event_type}):"
                         f" {error}; it is retried, and catches up once the cause is removed")
        self.read_model, self.position, self.event_type, self.error = read_model, position, event_type, error


class StorageUnavailable(CatalogError):
    """A warehouse's storage or the service that vends access to it (GCS's token exchange) could not be reached or
    refused the catalog's own credential; nothing was changed, and asking again may succeed."""


class Forbidden(CatalogError):
    """The caller may not do this (a signer request outside the table it was issued for, and the like)."""
