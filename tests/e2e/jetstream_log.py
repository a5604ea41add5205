"""What the tests of several processes compare: the event log in Postgres, id by id, with what a JetStream stream
holds, and the workers' positions with the log's head. A module of its own (not a test module) so the tests of
two servers and of two workers processes share one definition of "exactly once"."""

import asyncio
import time
from collections import Counter

import nats
import orjson
import psycopg
from nats.js.errors import NotFoundError

from lakeledger.eventstore.identity import event_id

STREAM = "LAKELEDGER"


def log_ids(pg_url: str) -> list[tuple[int, str]]:
    """(position, event id) of every event, in log order."""
    with psycopg.connect(pg_url) as conn:
        rows = conn.execute("SELECT notification_id, originator_id, originator_version FROM lakeledger_events"
                            " ORDER BY notification_id").fetchall()
    return [(p, str(event_id(o, v))) for p, o, v in rows]


def head(pg_url: str) -> int:
    with psycopg.connect(pg_url) as conn:
        return conn.execute("SELECT coalesce(max(notification_id), 0) FROM lakeledger_events").fetchone()[0]


def positions(pg_url: str) -> dict[str, int]:
    """Every position row: projection or worker name -> the last log position it has taken in."""
    with psycopg.connect(pg_url) as conn:
        return dict(conn.execute("SELECT name, position FROM ll_projection_positions").fetchall())


async def _read(url: str) -> list[dict]:
    nc = await nats.connect(url, connect_timeout=2)
    try:
        js = nc.jetstream()
        try:
            info = await js.stream_info(STREAM)
        except NotFoundError:
            return []
        out = []
        for seq in range(info.state.first_seq, info.state.last_seq + 1):
            msg = await js.get_msg(STREAM, seq)
            out.append({"subject": msg.subject, "headers": msg.headers or {}, "data": msg.data,
                        "event": orjson.loads(msg.data)})
        return out
    finally:
        await nc.close()


async def _count(url: str) -> int:
    nc = await nats.connect(url, connect_timeout=2)
    try:
        return (await nc.jetstream().stream_info(STREAM)).state.messages
    except NotFoundError:
        return 0
    finally:
        await nc.close()


def count(url: str) -> int:
    """How many messages the stream holds (one request, where ``stream`` reads them all)."""
    return asyncio.run(_count(url))


def stream(url: str) -> list[dict]:
    """Every message of the stream, in stream order: {"subject", "headers", "data" (the body's bytes), "event" (the
    CloudEvent as JSON)}."""
    return asyncio.run(_read(url))


def published_at_head(nats_url: str, pg_url: str, timeout: float = 90) -> tuple[list[dict], list[tuple[int, str]]]:
    """Waits until the publisher's position is the log's head and the stream holds at least as many messages as
    the log has events; returns (messages, log ids) read after that, for ``assert_exactly_once``."""
    deadline = time.monotonic() + timeout
    while True:
        at = head(pg_url)
        if positions(pg_url).get("cloudevents") == at:
            messages, expected = stream(nats_url), log_ids(pg_url)
            if len(messages) >= len(expected) and expected[-1][0] == at:
                return messages, expected
        if time.monotonic() > deadline:
            return stream(nats_url), log_ids(pg_url)
        time.sleep(0.3)


def assert_exactly_once(messages: list[dict], expected: list[tuple[int, str]]) -> None:
    """Every event of the log published once, none missing, none twice, none made up, in log order."""
    published = [m["event"]["id"] for m in messages]
    repeated = [i for i, n in Counter(published).items() if n > 1]
    assert not repeated, f"{len(repeated)} events published more than once"
    missing = {i for _, i in expected} - set(published)
    assert not missing, f"{len(missing)} of {len(expected)} events never published"
    assert len(published) == len(expected), "the stream holds messages that are not events of the log"
    assert published == [i for _, i in expected], "published out of log order"
    assert [m["event"]["sequence"] for m in messages] == [p for p, _ in expected]
    assert all(m["headers"].get("Nats-Msg-Id") == m["event"]["id"] for m in messages)
