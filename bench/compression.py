"""Compressed loadTable answers (issue 14, point 8): bytes on the wire and req/s of the same load asked plainly,
with ``Accept-Encoding: gzip`` (what the Java client, Spark and Trino send) and with zstd, in alternating rounds
against one server, so that all three meet the same machine; and what compressing the body costs once, which
the server pays per metadata file (it keeps the compressed copy) rather than per request."""

import gzip
import statistics
import time
from collections.abc import Callable

import httpx
import zstandard

from lakeledger.api.compression import compress

from .loadgen import LoadResult

CODINGS = (("plain", None), ("gzip", "gzip"), ("zstd", "zstd"))


def _check(url: str, body: bytes) -> dict[str, int]:
    """Bytes of each answer's body on the wire; each must decode to ``body`` exactly."""
    sizes = {}
    with httpx.Client(timeout=30) as http:
        for name, coding in CODINGS:
            with http.stream("GET", url, headers={"Accept-Encoding": coding or "identity"}) as r:
                wire = b"".join(r.iter_raw())
            if r.status_code != 200 or r.headers.get("content-encoding") != coding:
                raise RuntimeError(f"loadTable asked for {coding or 'identity'}: {r.status_code}, "
                                   f"content-encoding {r.headers.get('content-encoding')}")
            got = gzip.decompress(wire) if coding == "gzip" else \
                zstandard.ZstdDecompressor().decompress(wire) if coding == "zstd" else wire
            if got != body:
                raise RuntimeError(f"the {name} answer does not decode to the plain body")
            sizes[name] = len(wire)
    return sizes


def _once_ms(body: bytes, coding: str) -> float:
    runs = []
    for _ in range(5):
        started = time.perf_counter()
        compress(body, coding, kept=True)
        runs.append((time.perf_counter() - started) * 1000)
    return statistics.median(runs)


def run(url: str, body: bytes, rounds: int, measure: Callable[[str, str, dict], LoadResult], say) -> str:
    sizes = _check(url, body)
    results: dict[str, list[LoadResult]] = {name: [] for name, _ in CODINGS}
    for n in range(1, rounds + 1):
        for name, coding in CODINGS:
            headers = {"Accept-Encoding": coding} if coding else {}
            results[name].append(measure(f"compression round {n}: loadTable {name}", url, headers))
    say("compression: done")
    plain_rps = statistics.mean(r.rps for r in results["plain"])
    lines = [f"Compressed loadTable answers ({len(body)}-byte body, {rounds} alternating rounds; "
             f"wire bytes per response include headers)",
             f"  {'answer':<8} {'body bytes':>10} {'wire B/resp':>11} {'req/s (rounds)':>26} {'p99 ms':>7} "
             f"{'CPU us/req':>10} {'req/s ratio':>11}"]
    for name, _ in CODINGS:
        runs = results[name]
        rps = statistics.mean(r.rps for r in runs)
        cpu = [r.server_cpu_us for r in runs if r.server_cpu_us is not None]
        per_round = f"{rps:,.0f} (" + ", ".join(f"{r.rps:,.0f}" for r in runs) + ")"
        lines.append(f"  {name:<8} {sizes[name]:>10,} {statistics.mean(r.bytes_per_response for r in runs):>11,.0f} "
                     f"{per_round:>26} {max(r.p99_ms for r in runs):>7.2f} "
                     f"{(f'{statistics.mean(cpu):.0f}' if cpu else '-'):>10} "
                     f"{rps / plain_rps if plain_rps else 0:>11.2f}")
    lines.append(f"  compressing this body once (kept per metadata file afterwards): gzip "
                 f"{_once_ms(body, 'gzip'):.2f} ms, zstd {_once_ms(body, 'zstd'):.2f} ms")
    return "\n".join(lines)
