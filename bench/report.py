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
    header = "  ".join(f"{h:<{w}}" if i == 0 else f"{h:>{w}}" for i, (h, w) in enumerate(zip(
        ("scenario", "ok", "non-2xx", "errors", "secs", "req/s", "p50 ms", "p99 ms"), widths))) + "  target"
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
        f"[{_mark(load_ok)}] | 304 {revalidate.rps:.0f} req/s | bare {bare.rps:.0f} req/s, ratio {ratio:.2f} [{_mark(ratio_ok)}] | "
        f"commits {commits.rps:.0f}/s p50 {commits.p50_ms:.2f} ms p99 {commits.p99_ms:.2f} ms, "
        f"{commits.non_200} non-200 [{_mark(commit_ok)}] | overall {_mark(all_ok)}")
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
    header = "  ".join(f"{h:<{w}}" if i == 0 else f"{h:>{w}}" for i, (h, w) in enumerate(zip(
        ("scenario", "ok", "non-2xx", "errors", "secs", "req/s", "p50 ms", "p99 ms", "server us/req"), widths)))
    rows = []
    for n, (f, v) in enumerate(zip(file_loads, vended_loads), 1):
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
        f"  signer: the URL a load with remote-signing answers; each request signs a GET of the table's metadata "
        f"file (checked: MinIO accepts the signature)",
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
