from dataclasses import dataclass

ANONYMOUS = "anonymous"
SYSTEM = "system"


@dataclass(frozen=True)
class Provenance:
    """Who asked for a change and under which request; every event carries both."""

    actor: str
    request_id: str
