"""The life of a dropped table, view or namespace, shared by each: soft or final, restorable until it expires.

A drop in a warehouse with a soft delete profile sets an expiry; until then the object can be undropped, after
it the expiry worker records its final deletion. A drop in a hard warehouse is final at once. These rules are
pure: the clock is an argument, so they are the same whoever (request or worker) applies them."""

from dataclasses import dataclass
from datetime import datetime, timedelta

from lakeledger.domain.errors import BadRequest, NotFound, Protected
from lakeledger.domain.storage_profile import DeleteProfile, SoftDelete

# The longest a soft-dropped object waits for its final deletion: 100 years (36,525 days). Far past any retention
# anyone keeps, and far inside what an expiry instant can be (Python's datetime ends at the year 9999).
MAX_EXPIRATION_SECONDS = 36_525 * 24 * 3600


def check_expiration(profile: DeleteProfile) -> DeleteProfile:
    """A delete profile a warehouse may be given from now on."""
    if isinstance(profile, SoftDelete) and profile.expiration_seconds > MAX_EXPIRATION_SECONDS:
        raise BadRequest(f"Invalid delete-profile: expiration-seconds must be at most {MAX_EXPIRATION_SECONDS} "
                         f"(100 years), not {profile.expiration_seconds}")
    return profile


def expiry(profile: DeleteProfile, now: datetime, immediately: bool = False) -> datetime | None:
    """When a drop made now expires: None means the drop is final at once."""
    if immediately or not isinstance(profile, SoftDelete):
        return None
    # a longer expiration in a log written before the limit is held to it, so such a warehouse can still drop
    return now + timedelta(seconds=min(profile.expiration_seconds, MAX_EXPIRATION_SECONDS))


@dataclass
class DeletionState:
    """Where a droppable object stands; each aggregate holds one."""

    dropped: bool = False
    expires_at: datetime | None = None  # set while soft-dropped
    deleted: bool = False  # the drop is final (hard drop, or expired)
    with_namespace: object = None  # the namespace whose recursive drop took it along
    protected: bool = False

    @property
    def soft_dropped(self) -> bool:
        return self.dropped and not self.deleted

    def check_droppable(self, kind: str, label: str, force: bool) -> None:
        if self.protected and not force:
            raise Protected(kind, f"{kind.capitalize()} {label} is protected; drop it with force=true "
                                  f"or remove the protection first")

    def check_restorable(self, kind: str, label: str, now: datetime) -> None:
        if not self.soft_dropped:
            raise NotFound(f"No soft-deleted {kind} {label}: it is live, or its deletion is final")
        if self.expires_at is not None and self.expires_at <= now:
            raise NotFound(f"The soft-deleted {kind} {label} expired at {self.expires_at.isoformat()}")

    def protection_changes(self, protected: object) -> bool:
        """Whether setting ``protected`` changes anything (the same flag again records nothing)."""
        if not isinstance(protected, bool):
            raise BadRequest("protected must be true or false")
        return protected != self.protected

    def is_due(self, now: datetime) -> bool:
        return self.soft_dropped and self.expires_at is not None and self.expires_at <= now

    def drop(self, expires_at: datetime | None, with_namespace: object) -> None:
        self.dropped, self.expires_at, self.with_namespace = True, expires_at, with_namespace
        self.deleted = expires_at is None

    def restore(self) -> None:
        self.dropped, self.expires_at, self.deleted, self.with_namespace = False, None, False, None

    def expire(self) -> None:
        self.deleted, self.expires_at = True, None
