"""The change-approval hook over HTTP (lakeledger/services/approval.py says what it decides), in a module of its own:
only a server with LAKELEDGER__CHANGE_APPROVAL_URL set imports httpx for it."""

import logging

import httpx
import orjson

from lakeledger.domain.errors import ChangeApprovalUnavailable, ChangeRefused
from lakeledger.services.approval import ProposedChange

logger = logging.getLogger("lakeledger.approval")


class HttpApproval:
    """Asks a configured endpoint: POST the proposed change as JSON; a 200 answer of ``{"approved": true}`` lets it
    through, ``{"approved": false, "reason": "..."}`` refuses it. Anything else (no answer in time, another status,
    another body) is not an approval: the change is not made and the client gets a 424 it may retry."""

    def __init__(self, url: str, timeout_seconds: float):
        self.url = url
        self._client = httpx.Client(timeout=timeout_seconds)

    def review(self, change: ProposedChange) -> None:
        try:
            response = self._client.post(self.url, content=orjson.dumps(change.as_json(), default=str),
                                         headers={"Content-Type": "application/json"})
        except httpx.HTTPError as e:
            logger.warning("Change approval endpoint %s unreachable: %s", self.url, e)
            raise ChangeApprovalUnavailable(f"The change-approval service could not be reached ({type(e).__name__});"
                                            f" nothing was changed") from None
        verdict = _verdict(response)
        if verdict is None:
            raise ChangeApprovalUnavailable(f"The change-approval service answered {response.status_code} without a "
                                            f"verdict; nothing was changed")
        approved, reason = verdict
        if not approved:
            raise ChangeRefused(f"Change refused by the change-approval service: {reason or 'no reason given'}")

    def close(self) -> None:
        self._client.close()


def _verdict(response: httpx.Response) -> tuple[bool, str | None] | None:
    if response.status_code != 200:
        return None
    try:
        body = response.json()
    except ValueError:
        return None
    if not isinstance(body, dict) or not isinstance(body.get("approved"), bool):
        return None
    reason = body.get("reason")
    return body["approved"], reason if isinstance(reason, str) else None
