from typing import Annotated
from uuid import UUID

from fastapi import Depends, Request

from lakeledger.bootstrap import Container
from lakeledger.domain.errors import BadRequest


# Dependencies are coroutines: a plain ``def`` would cost every request a hop to the thread pool.
async def container(request: Request) -> Container:
    found: Container = request.app.state.lakeledger
    return found


# A handler's parameter ``container: ContainerDep`` is the composition root, typed.
ContainerDep = Annotated[Container, Depends(container)]


def boolean_param(value: str | None, name: str, default: bool) -> bool:
    """Query flags as clients send them: true/false in any case."""
    if value is None or value == "":
        return default
    lowered = value.lower()
    if lowered in ("true", "1"):
        return True
    if lowered in ("false", "0"):
        return False
    raise BadRequest(f"Query parameter {name} must be true or false")


def uuid_param(value: str, name: str) -> UUID:
    try:
        return UUID(value)
    except ValueError:
        raise BadRequest(f"{name} must be a UUID, not {value!r}") from None
