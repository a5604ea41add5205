from uuid import UUID

from lakeledger.bootstrap import Container
from lakeledger.domain.errors import BadRequest


def project_id_of(header: str | None, container: Container) -> UUID:
    """The project a request means: the ``x-project-id`` header, else the default project."""
    if header is not None and header.strip():
        try:
            return UUID(header.strip())
        except ValueError:
            raise BadRequest(f"Malformed x-project-id header: {header}") from None
    if not container.settings.enable_default_project:
        raise BadRequest("This endpoint requires a project: set the x-project-id header")
    return UUID(int=0)
