"""The authorization section (issue 13): what OpenID Connect authentication and OpenFGA authorization cost an
engine's two hot requests, loadTable and commit, measured against the same requests with both off, in one run.

It starts an OpenID provider (tests/oidc's oidc-provider, ``make oidc-deps``) and an OpenFGA (memory datastore,
``make openfga-deps``), runs ``lakeledger migrate`` for the OpenFGA store, then three ``lakeledger serve`` on the
bench's Postgres (one database, so they serve the very same tables):

* ``off``: neither authentication nor authorization (allowall);
* ``on``: OIDC + OpenFGA, decisions remembered ``LAKELEDGER__AUTHZ_CACHE_SECONDS`` (the default, 2 s);
* ``uncached``: the same with 0, so every request asks OpenFGA: what a decision cache miss costs.

The provider's client ``spark`` bootstraps (server operator) and creates the warehouse and tables through ``on``,
so it owns them; ``off`` serves them to anyone. Before measuring, ``on`` must refuse a request without a token
(401) and answer another client as if the table did not exist (404): the figures are those of a server that
really checks. Each round measures every server in turn (the order rotating), so all meet the same machine."""

import os
import subprocess
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from . import catalog, commits
from .commits import CommitResult
from .loadgen import LoadResult
from .procs import ServerProcess, cpu_seconds, lakeledger_env, start_lakeledger, start_oidc_provider, start_openfga

AUDIENCE = "lakeledger"
OWNER, STRANGER = "spark", "bob"  # clients of tests/oidc/provider.mjs, secret "<client>-secret"
CACHE_SECONDS = "2"  # LAKELEDGER__AUTHZ_CACHE_SECONDS's default, spelt out so the report cannot drift from it
LABELS = ("off", "on", "uncached")


@dataclass
class AuthResults:
    body_bytes: int = 0  # the loadTable answer, the same bytes from every server
    load: dict[str, list[LoadResult]] = field(default_factory=lambda: {k: [] for k in LABELS})
    revalidate: dict[str, list[LoadResult]] = field(default_factory=lambda: {k: [] for k in LABELS[:2]})
    commits: dict[str, list[CommitResult]] = field(default_factory=lambda: {k: [] for k in LABELS})
    commit_cpu_us: dict[str, list[float]] = field(default_factory=lambda: {k: [] for k in LABELS})


def token(issuer: str, client: str) -> str:
    r = httpx.post(f"{issuer}/token", data={"grant_type": "client_credentials", "client_id": client,
                                            "client_secret": f"{client}-secret", "scope": "catalog"}, timeout=10)
    return catalog.check(r, 200).json()["access_token"]


def _migrate(pg_url: str, data_dir: Path, settings: dict[str, str]) -> None:
    """``lakeledger migrate``: the schema, and the OpenFGA store and model the servers then find."""
    done = subprocess.run([sys.executable, "-m", "lakeledger.cli", "migrate"],
                          env={**os.environ, **lakeledger_env(pg_url, data_dir, **settings)},
                          capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"lakeledger migrate failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")


def _build(http: httpx.Client, work: Path, snapshots: int, tables: int):
    """Bootstrap, a file warehouse, the loadTable table with ``snapshots`` commits and the commit tables."""
    catalog.check(http.post("/management/v1/bootstrap", json={"accept-terms-of-use": True, "is-operator": True}),
                  204)
    location = work / "auth-warehouse"
    location.mkdir()
    wh = catalog.create_warehouse(http, f"bench-auth-{uuid.uuid4().hex[:8]}", f"file://{location}")
    catalog.create_namespace(http, wh, "bench")
    table = catalog.create_table(http, wh, "bench", "load_me")
    for _ in range(snapshots):
        catalog.commit_snapshot(http, table)
    return table, [catalog.create_table(http, wh, "bench", f"commit_{i:03d}") for i in range(tables)]


def _check_enforced(server: ServerProcess, issuer: str, table: catalog.TableHandle) -> None:
    anonymous = httpx.get(server.url + table.path, timeout=10)
    stranger = httpx.get(server.url + table.path, headers={"Authorization": f"Bearer {token(issuer, STRANGER)}"},
                         timeout=10)
    if anonymous.status_code != 401 or stranger.status_code != 404:
        raise RuntimeError(f"{server.name} does not enforce authorization: no token -> {anonymous.status_code}, "
                           f"{STRANGER}'s token -> {stranger.status_code} (expected 401 and 404)")


def run(args, work: Path, pg_url: str, started: list, measure: Callable[..., LoadResult],
        say: Callable[[str], None]) -> AuthResults:
    """``measure(name, url, headers, server_pid)`` times one loadTable load (warm-up included); what this starts
    is appended to ``started`` for the caller to stop (it stops it too when done)."""
    mine: list = []

    def start(thing):
        mine.append(thing)
        started.append(thing)
        return thing

    try:
        say("auth: starting oidc-provider and OpenFGA")
        oidc = start(start_oidc_provider(work, AUDIENCE))
        fga = start(start_openfga(work))
        data = work / "auth-data"
        auth = {"OPENID_PROVIDER_URI": oidc.url, "OPENID_AUDIENCE": AUDIENCE, "AUTHZ_BACKEND": "openfga",
                "OPENFGA__ENDPOINT": fga.url, "OPENFGA__STORE_NAME": "bench", "WORKERS": "off"}
        say("auth: lakeledger migrate (schema and OpenFGA store)")
        _migrate(pg_url, data, auth)
        say("auth: starting three lakeledger serve: off, on (OIDC + OpenFGA), uncached (decisions not remembered)")
        servers = {
            "on": start(start_lakeledger(pg_url, data, work, "auth-on", AUTHZ_CACHE_SECONDS=CACHE_SECONDS, **auth)),
            "uncached": start(start_lakeledger(pg_url, data, work, "auth-uncached", AUTHZ_CACHE_SECONDS="0", **auth)),
            "off": start(start_lakeledger(pg_url, data, work, "auth-off", WORKERS="off")),
        }
        bearer = {"Authorization": f"Bearer {token(oidc.url, OWNER)}"}
        headers = {"off": {}, "on": bearer, "uncached": bearer}
        say(f"auth: {OWNER} bootstraps and creates a table with {args.snapshots} snapshots and {args.tables} "
            f"commit tables through the server with OpenFGA")
        with httpx.Client(base_url=servers["on"].url, timeout=60, headers=bearer) as http:
            table, commit_tables = _build(http, work, args.snapshots, args.tables)
        bodies = {k: catalog.check(httpx.get(s.url + table.path, headers=headers[k], timeout=10), 200)
                  for k, s in servers.items()}
        if len({r.content for r in bodies.values()}) != 1:
            raise RuntimeError("the three servers answer loadTable of one table with different bytes: "
                               + ", ".join(f"{k} {len(r.content)}" for k, r in bodies.items()))
        for label in ("on", "uncached"):
            _check_enforced(servers[label], oidc.url, table)

        results = AuthResults(len(bodies["off"].content))
        for n in range(args.auth_rounds):
            order = LABELS[n % 3:] + LABELS[:n % 3]  # rotated, so no server is always measured first
            for label in order:
                s = servers[label]
                results.load[label].append(measure(f"auth round {n + 1}: loadTable, {label}", s.url + table.path,
                                                   headers[label], s.pid))
            for label in (k for k in order if k in results.revalidate):
                s = servers[label]
                tag = {"If-None-Match": bodies[label].headers["etag"], **headers[label]}
                results.revalidate[label].append(measure(f"auth round {n + 1}: loadTable 304, {label}",
                                                         s.url + table.path, tag, s.pid))
            for label in order:
                s = servers[label]
                cpu_before = cpu_seconds(s.pid)
                result = commits.run(s.url, commit_tables, args.commit_clients, args.auth_seconds, headers[label])
                results.commits[label].append(result)
                results.commit_cpu_us[label].append(
                    (cpu_seconds(s.pid) - cpu_before) / result.ok * 1e6 if result.ok else 0.0)
                say(f"auth round {n + 1}: commits, {label}: {result.rps:.0f}/s, p50 {result.p50_ms:.2f} ms, "
                    f"{result.non_200} non-200")
        for s in servers.values():
            if s.process.poll() is not None:
                raise RuntimeError(f"{s.name} died during the run:\n{s.tail()}")
            errors = sum(1 for line in s.tail(10_000_000).splitlines() if " ERROR " in line)
            if errors:
                say(f"{s.name} logged {errors} ERROR lines (run with --keep to read {s.log_path})")
        return results
    finally:
        for thing in reversed(mine):
            thing.stop()
            started.remove(thing)
