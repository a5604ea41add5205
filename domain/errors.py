"""Domain errors. Each one names what went wrong in the catalog's own terms; the API maps them to
the Iceberg ErrorModel ``type`` names that the Java client understands."""


class CatalogError(Exception):
    """Base of every refusal the catalog makes on purpose."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class BadRequest(CatalogError):
    pass


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


class AlreadyExists(CatalogError):
    pass


class NamespaceNotEmpty(CatalogError):
    pass


class WarehouseNotEmpty(CatalogError):
    pass


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
