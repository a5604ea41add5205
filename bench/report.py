"""The printed table and the one-line summary."""

from .commits import CommitResult
from .loadgen import LoadResult

LOAD_RPS_TARGET = 3000.0
LOAD_P99_TARGET_MS = 10.0
RATIO_TARGET = 0.5
COMMIT_RPS_TARGET = 400.0
COMMIT_P50_TARGET_MS = 10.0


def _mark(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def render(load: LoadResult, bare: LoadResult, revalidate: LoadResult, commits: CommitResult,
           context: dict) -> tuple[str, bool]:
    """The report, and whether every target was met."""
    ratio = load.rps / bare.rps if bare.rps else 0.0
    load_ok = load.rps >= LOAD_RPS_TARGET and load.p99_ms <= LOAD_P99_TARGET_MS and load.non_2xx == 0 \
        and load.errors == 0
    ratio_ok = ratio >= RATIO_TARGET
    commit_ok = commits.rps >= COMMIT_RPS_TARGET and commits.p50_ms <= COMMIT_P50_TARGET_MS \
        and commits.non_200 == 0 and commits.errors == 0

    widths = (46, 8, 8, 7, 6, 9, 8, 8)
    header = (
        "  ".join(
            f"{h:<{w}}" if i == 0 else f"{h:>{w}}"
            for i, (h, w) in enumerate(
                zip(("scenario", "ok", "non-2xx", "errors", "secs", "req/s", "p50 ms", "p99 ms"), widths, strict=True)
            )
        )
        + "  target"
    )
    rows = [
        (f"loadTable, {context['snapshots']} snapshots (Lakeledger)", load.ok, load.non_2xx, load.errors,
         load.duration_s, load.rps, load.p50_ms, load.p99_ms,
         f">= {LOAD_RPS_TARGET:.0f} req/s, p99 <= {LOAD_P99_TARGET_MS:g} ms: {_mark(load_ok)}"),
        ("loadTable revalidated (If-None-Match -> 304)", revalidate.ok, revalidate.non_2xx, revalidate.errors,
         revalidate.duration_s, revalidate.rps, revalidate.p50_ms, revalidate.p99_ms,
         f"x{revalidate.rps / load.rps if load.rps else 0:.2f} of a full load"),
        ("loadTable bytes from a bare FastAPI endpoint", bare.ok, bare.non_2xx, bare.errors, bare.duration_s,
         bare.rps, bare.p50_ms, bare.p99_ms, "reference"),
        (f"commit +1 snapshot ({commits.clients} clients, {commits.tables} tables)", commits.ok,
         commits.non_200, commits.errors, commits.duration_s, commits.rps, commits.p50_ms, commits.p99_ms,
         f">= {COMMIT_RPS_TARGET:.0f}/s, p50 <= {COMMIT_P50_TARGET_MS:g} ms: {_mark(commit_ok)}"),
    ]
    rule = "-" * (len(header) + 22)
    lines = [
        "Lakeledger benchmark",
        f"  machine: {context['cpus']} CPUs, loopback only; each server is uvicorn, 1 process, access log off",
        f"  loadTable: {context['load_tool']}, {context['load_seconds']:g} s after a {context['warmup_seconds']:g} s "
        f"warm-up; the {context['body_bytes']}-byte body is identical on both servers",
        f"  commits: httpx.AsyncClient keep-alive, one table set per client, {context['commit_seconds']:g} s; "
        f"only 200s count",
        "",
        header,
        rule,
    ]
    for name, ok, bad, err, secs, rps, p50, p99, target in rows:
        cells = (f"{name:<{widths[0]}}", f"{ok:>{widths[1]}}", f"{bad:>{widths[2]}}", f"{err:>{widths[3]}}",
                 f"{secs:>{widths[4]}.1f}", f"{rps:>{widths[5]}.0f}", f"{p50:>{widths[6]}.2f}",
                 f"{p99:>{widths[7]}.2f}")
        lines.append("  ".join(cells) + f"  {target}")
    lines.append(rule)
    lines.append(f"ratio loadTable req/s Lakeledger / bare: {ratio:.2f}  (target >= {RATIO_TARGET:g}: "
                 f"{_mark(ratio_ok)})")
    if commits.non_200 or commits.errors:
        by_status = ", ".join(f"{s}: {n}" for s, n in sorted(commits.statuses.items())) or "none"
        lines.append(f"commit failures: non-200 by status {{{by_status}}}, transport errors {commits.errors}")
        for failure in commits.first_failures:
            lines.append(f"  e.g. {failure}")
    lines.append("")
    all_ok = load_ok and ratio_ok and commit_ok
    lines.append(
        f"SUMMARY: loadTable {load.rps:.0f} req/s p50 {load.p50_ms:.2f} ms p99 {load.p99_ms:.2f} ms "
        f"[{_mark(load_ok)}] | 304 {revalidate.rps:.0f} req/s | "
        f"bare {bare.rps:.0f} req/s, ratio {ratio:.2f} [{_mark(ratio_ok)}] | "
        f"commits {commits.rps:.0f}/s p50 {commits.p50_ms:.2f} ms p99 {commits.p99_ms:.2f} ms, "
        f"{commits.non_200} non-200 [{_mark(commit_ok)}] | overall {_mark(all_ok)}"
    )
    return "\n".join(lines), all_ok


S3_RATIO_TARGET = 0.85  # vended-credential loads within 15 % of file-warehouse loads


def render_s3(file_loads: list[LoadResult], vended_loads: list[LoadResult], signer: LoadResult,
              context: dict) -> tuple[str, bool]:
    """The S3 section: file vs vended loadTable, round by round, their ratio, and the signer."""
    file_rps = sum(r.rps for r in file_loads) / len(file_loads)
    vended_rps = sum(r.rps for r in vended_loads) / len(vended_loads)
    ratio = vended_rps / file_rps if file_rps else 0.0
    ratio_ok = ratio >= S3_RATIO_TARGET and all(r.non_2xx == 0 and r.errors == 0 for r in vended_loads)
    file_cpu = _mean_cpu(file_loads)
    vended_cpu = _mean_cpu(vended_loads)
    widths = (50, 8, 8, 7, 6, 9, 8, 8, 12)
    header = "  ".join(
        f"{h:<{w}}" if i == 0 else f"{h:>{w}}"
        for i, (h, w) in enumerate(
            zip(
                ("scenario", "ok", "non-2xx", "errors", "secs", "req/s", "p50 ms", "p99 ms", "server us/req"),
                widths,
                strict=True,
            )
        )
    )
    rows = []
    for n, (f, v) in enumerate(zip(file_loads, vended_loads, strict=True), 1):
        rows.append((f"round {n}: loadTable, file warehouse", f))
        rows.append((f"round {n}: loadTable, S3, vended credentials (cached)", v))
    rows.append(("S3 signer POST .../v1/aws/s3/sign (GET of an object)", signer))
    rule = "-" * len(header)
    lines = [
        "",
        "S3 (MinIO on loopback, STS-enabled warehouse)",
        f"  loadTable: {context['load_tool']}, {context['snapshots']} snapshots per table, each measurement "
        f"{context['load_seconds']:g} s after a {context['warmup_seconds']:g} s warm-up, file and S3 alternating; "
        f"both send X-Iceberg-Access-Delegation: vended-credentials",
        f"  bodies: file {context['file_body_bytes']} bytes, S3 with credentials {context['vended_body_bytes']} bytes",
        "  signer: the URL a load with remote-signing answers; each request signs a GET of the table's metadata "
        "file (checked: MinIO accepts the signature)",
        "",
        header,
        rule,
    ]
    for name, r in rows:
        cells = (f"{name:<{widths[0]}}", f"{r.ok:>{widths[1]}}", f"{r.non_2xx:>{widths[2]}}",
                 f"{r.errors:>{widths[3]}}", f"{r.duration_s:>{widths[4]}.1f}", f"{r.rps:>{widths[5]}.0f}",
                 f"{r.p50_ms:>{widths[6]}.2f}", f"{r.p99_ms:>{widths[7]}.2f}",
                 f"{r.server_cpu_us:>{widths[8]}.0f}" if r.server_cpu_us is not None else f"{'-':>{widths[8]}}")
        lines.append("  ".join(cells))
    lines.append(rule)
    lines.append(f"ratio loadTable req/s S3 vended / file (mean of {len(file_loads)} rounds each): {ratio:.2f}  "
                 f"(target >= {S3_RATIO_TARGET:g}, i.e. within 15 %: {_mark(ratio_ok)})")
    if file_cpu and vended_cpu:
        lines.append(f"server CPU per loadTable (the catalog process alone, what the machine's other load does not "
                     f"move): file {file_cpu:.0f} us, S3 vended {vended_cpu:.0f} us (x{vended_cpu / file_cpu:.2f})")
    lines.append(f"S3 SUMMARY: vended loadTable {vended_rps:.0f} req/s vs file {file_rps:.0f} req/s, ratio "
                 f"{ratio:.2f} [{_mark(ratio_ok)}] | signer {signer.rps:.0f} req/s p50 {signer.p50_ms:.2f} ms "
                 f"p99 {signer.p99_ms:.2f} ms, {signer.non_2xx} non-2xx")
    return "\n".join(lines), ratio_ok


def _mean_cpu(results: list[LoadResult]) -> float | None:
    measured = [r.server_cpu_us for r in results if r.server_cpu_us is not None]
    return sum(measured) / len(measured) if measured else None


AUTH_RATIO_TARGET = 0.7  # PRODUCT.md: loadTable and commits with OIDC + OpenFGA at >= 70 % of auth off


def render_auth(results, context: dict) -> tuple[str, bool]:
    """The authorization section (bench/auth.py ``AuthResults``): per metric, the median of the rounds for each
    server and the ratio of ``on`` (and ``uncached``) to ``off``."""
    from statistics import median

    def med(values) -> float:
        return median(values) if values else 0.0

    def load_rows(title: str, runs: dict[str, list[LoadResult]]) -> list[tuple[str, dict[str, float], bool]]:
        return [(f"{title} req/s", {k: med([r.rps for r in v]) for k, v in runs.items()}, True),
                (f"{title} p50 ms", {k: med([r.p50_ms for r in v]) for k, v in runs.items()}, False),
                (f"{title} p99 ms", {k: med([r.p99_ms for r in v]) for k, v in runs.items()}, False),
                (f"{title} server CPU us/req", {k: med([r.server_cpu_us or 0.0 for r in v])
                                                    for k, v in runs.items()}, False)]

    rows = load_rows("loadTable", results.load) + load_rows("loadTable 304", results.revalidate)
    rows += [("commits/s", {k: med([r.rps for r in v]) for k, v in results.commits.items()}, True),
             ("commit p50 ms", {k: med([r.p50_ms for r in v]) for k, v in results.commits.items()}, False),
             ("commit p99 ms", {k: med([r.p99_ms for r in v]) for k, v in results.commits.items()}, False),
             ("commit server CPU us/commit", {k: med(v) for k, v in results.commit_cpu_us.items()}, False)]

    def ratio(values: dict[str, float], label: str) -> str:
        if label not in values:
            return "-"
        return f"{values[label] / values['off']:.2f}" if values["off"] else "-"

    def cell(values: dict[str, float], label: str, per_second: bool) -> str:
        if label not in values:
            return "-"
        return f"{values[label]:.0f}" if per_second or values[label] >= 100 else f"{values[label]:.2f}"

    widths = (30, 9, 9, 7, 9, 12)
    header = "  ".join(f"{h:<{w}}" if i == 0 else f"{h:>{w}}" for i, (h, w) in enumerate(zip(
        ("what (median of rounds)", "off", "on", "on/off", "uncached", "uncached/off"), widths, strict=True)))
    rule = "-" * len(header)
    lines = [
        "",
        "Authorization: OIDC + OpenFGA (on) against neither (off), the same tables on the same Postgres",
        f"  loadTable: {context['load_tool']}, {context['snapshots']} snapshots, {context['body_bytes']} bytes, each "
        f"{context['seconds']:g} s after a {context['warmup_seconds']:g} s warm-up; commits: {context['clients']} "
        f"clients over {context['tables']} tables, {context['seconds']:g} s; rounds: {context['rounds']}, servers in "
        f"rotating order; 304: If-None-Match with the load's ETag",
        f"  on: decisions remembered {context['cache_seconds']} s (LAKELEDGER__AUTHZ_CACHE_SECONDS); uncached: 0, "
        f"every request asks OpenFGA (a cache miss each time); every server 1 uvicorn process, workers off",
        "",
        header,
        rule,
    ]
    for name, values, per_second in rows:
        cells = (f"{name:<{widths[0]}}", f"{cell(values, 'off', per_second):>{widths[1]}}",
                 f"{cell(values, 'on', per_second):>{widths[2]}}", f"{ratio(values, 'on'):>{widths[3]}}",
                 f"{cell(values, 'uncached', per_second):>{widths[4]}}",
                 f"{ratio(values, 'uncached'):>{widths[5]}}")
        lines.append("  ".join(cells))
    lines.append(rule)
    for title, runs in (("loadTable req/s", {k: [r.rps for r in v] for k, v in results.load.items()}),
                        ("commits/s", {k: [r.rps for r in v] for k, v in results.commits.items()})):
        lines.append(f"{title} by round: " + "; ".join(f"{k} " + ", ".join(f"{x:.0f}" for x in v)
                                                        for k, v in runs.items()))
    load_rps, commit_rps = rows[0][1], next(v for n, v, _ in rows if n == "commits/s")
    load_ratio = load_rps["on"] / load_rps["off"] if load_rps["off"] else 0.0
    commit_ratio = commit_rps["on"] / commit_rps["off"] if commit_rps["off"] else 0.0
    failed = sum(r.non_2xx + r.errors for runs in (results.load, results.revalidate) for v in runs.values()
                 for r in v) + sum(r.non_200 + r.errors for v in results.commits.values() for r in v)
    ok = load_ratio >= AUTH_RATIO_TARGET and commit_ratio >= AUTH_RATIO_TARGET and not failed
    cpu = rows[3][1]
    lines.append(f"a decision cache miss (uncached - on): {cpu['uncached'] - cpu['on']:+.0f} us server CPU and "
                 f"{rows[1][1]['uncached'] - rows[1][1]['on']:+.2f} ms p50 per loadTable")
    if failed:
        lines.append(f"failed requests (non-2xx or transport errors) across the section: {failed}")
    lines.append(f"AUTH SUMMARY: on/off loadTable {load_ratio:.2f}, commits {commit_ratio:.2f} (target >= "
                 f"{AUTH_RATIO_TARGET:g}: {_mark(ok)}) | uncached/off loadTable "
                 f"{load_rps['uncached'] / load_rps['off'] if load_rps['off'] else 0:.2f}")
    return "\n".join(lines), ok
