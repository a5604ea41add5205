"""Readiness: can this process serve the catalog right now? Each check is named in the answer, so a failing
probe says which part is down.

* ``postgres``: a connection of the API's pool answers ``SELECT 1`` within the timeout;
* ``migrations``: every migration this version ships is applied (a newer binary against an old schema is not ready
  until ``lakeledger migrate`` ran);
* ``read-models``: no read model the catalog API reads to answer correctly (the catalog, and OpenFGA's tuples
  when that is the authorization backend: lakeledger/bootstrap.py ``read_models_readiness_needs`` says why) is
  further behind the log than the bound (the age of its oldest unapplied event). The history, the access history,
  time travel's catalog versions, the expiry schedule and users and roles do not count: when one of them is stuck
  its own endpoints answer 503 and an alarm is raised (lakeledger/workers/alarm.py) while the catalog goes on
  serving; the CloudEvents publisher and the purger are not read models and do not count either;
* ``nats``: when CloudEvents go to NATS, a connection signed in as the publisher signs in
(lakeledger/sinks/nats_auth.py) answers a round trip: a server that is up but refuses our credentials is as useless as
one that is down.

Liveness (``/health``) asks nothing of them: a process that answers is alive, and restarting it would not bring
Postgres back."""

import asyncio
import contextlib
from dataclasses import dataclass, field

from lakeledger.operations.database_collector import CONSUMER_LAGS

TIMEOUT_SECONDS = 2.0


@dataclass
class Readiness:
    ready: bool
    checks: dict[str, str] = field(default_factory=dict)

    @property
    def failing(self) -> list[str]:
        return [name for name, result in self.checks.items() if result != "ok"]

    def body(self) -> dict:
        return {"status": "ready" if self.ready else "unavailable", "failing": self.failing, "checks": self.checks}


class ReadinessChecks:
    def __init__(self, pool, migrations: list[str], read_models: list[str], max_lag_seconds: float,
                 nats_address: str | None, nats_options: dict | None = None):
        self.pool = pool
        self.read_models = read_models
        self.migrations = migrations
        self.max_lag_seconds = max_lag_seconds
        self.nats_address = nats_address
        self.nats_options = nats_options or {}

    async def run(self) -> Readiness:
        checks: dict[str, str] = {}
        try:
            await asyncio.wait_for(self._database(checks), TIMEOUT_SECONDS)
        except Exception as e:  # unreachable, refused, timed out: the probe's answer, never an error of its own
            checks["postgres"] = f"unreachable: {reason(e)}"
            checks.setdefault("migrations", "not checked: Postgres is unreachable")
            checks.setdefault("read-models", "not checked: Postgres is unreachable")
        if self.nats_address:
            checks["nats"] = await self._nats()
        return Readiness(all(v == "ok" for v in checks.values()), checks)

    async def _database(self, checks: dict[str, str]) -> None:
        async with self.pool.connection(timeout=TIMEOUT_SECONDS) as conn:
            await conn.execute("SELECT 1")
            checks["postgres"] = "ok"
            cur = await conn.execute("SELECT name FROM ll_schema_migrations")
            applied = {row[0] for row in await cur.fetchall()}
            missing = [m for m in self.migrations if m not in applied]
            checks["migrations"] = "ok" if not missing else \
                f"not applied: {', '.join(missing)} (run `lakeledger migrate`)"
            cur = await conn.execute(CONSUMER_LAGS, (self.read_models,))
            behind = sorted((float(age), name) for name, _, _, age in await cur.fetchall()
                            if age is not None and float(age) > self.max_lag_seconds)
            checks["read-models"] = "ok" if not behind else "behind the log: " + ", ".join(
                f"{name} by {age:.0f} s" for age, name in reversed(behind))

    async def _nats(self) -> str:
        try:
            await asyncio.wait_for(self._nats_round_trip(), TIMEOUT_SECONDS)
            return "ok"
        except Exception as e:  # refused, timed out, credentials refused
            return f"unreachable: {reason(e)}"

    async def _nats_round_trip(self) -> None:
        import nats

        async def quiet(e):  # nats-py prints every failed attempt otherwise; the answer names the failure
            pass

        assert self.nats_address is not None  # asked only when there is one (check above)
        nc = await nats.connect(self.nats_address, connect_timeout=TIMEOUT_SECONDS, allow_reconnect=False,
                                max_reconnect_attempts=0, name="lakeledger-readiness", error_cb=quiet,
                                **self.nats_options)
        try:
            # nats-py annotates whole seconds but hands the timeout to asyncio.wait_for, which takes any
            await nc.flush(timeout=TIMEOUT_SECONDS)  # type: ignore[arg-type]
        finally:
            with contextlib.suppress(Exception):
                await nc.close()


def reason(e: BaseException) -> str:
    """An error as one short line: its type and its message's first line."""
    text = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return f"{type(e).__name__}{': ' + text[:200] if text else ''}"
