"""Closed-loop HTTP GET load: a fixed number of keep-alive connections, each sending its next
request as soon as the previous response arrived, for a fixed duration.

``wrk`` (Debian package ``wrk``, compiled C) is used when it is on PATH, so the load generator
costs the 2-core box as little as possible; otherwise a multi-process asyncio client on raw
sockets does the same job (it costs more CPU, so its numbers are a lower bound)."""

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from .stats import percentile

WRK_SCRIPT = r"""
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRK_JSON {"requests":%d,"duration_us":%d,"bytes":%d,"connect":%d,"read":%d,"write":%d,' ..
    '"status":%d,"timeout":%d,"p50_us":%d,"p99_us":%d,"max_us":%d,"mean_us":%f}\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(99), latency.max, latency.mean))
end
"""


@dataclass
class LoadResult:
    tool: str
    requests: int        # completed responses
    non_2xx: int         # of which not 2xx
    errors: int          # socket errors and timeouts (no response)
    duration_s: float
    p50_ms: float
    p99_ms: float
    bytes_per_response: float
    server_cpu_us: float | None = None  # the server process's CPU time per request, when measured

    @property
    def ok(self) -> int:
        return self.requests - self.non_2xx

    @property
    def rps(self) -> float:
        return self.ok / self.duration_s if self.duration_s else 0.0


def wrk_path() -> str | None:
    return shutil.which("wrk")


def describe(tool: str, connections: int, threads: int) -> str:
    if tool == "wrk":
        return f"wrk -t{threads} -c{connections}"
    return f"python asyncio client, {threads} processes, {connections} connections"


def run(url: str, connections: int, duration_s: float, threads: int, tool: str,
        headers: dict[str, str] | None = None, body: bytes | None = None) -> LoadResult:
    """``headers`` are sent with every request (e.g. If-None-Match); 304 counts as a success. With ``body``
    every request is a POST of that JSON body (the signer), otherwise a GET."""
    headers = dict(headers or {})
    if body is not None:
        headers["Content-Type"] = "application/json"
    if tool == "wrk":
        return _run_wrk(url, connections, duration_s, threads, headers, body)
    return _run_python(url, connections, duration_s, threads, headers, body)


def _lua_post(body: bytes) -> str:
    """wrk's request settings for a POST of ``body``: a Lua long string, whose level no body line can close."""
    text = body.decode()
    level = 0
    while f"]{'=' * level}]" in text:
        level += 1
    eq = "=" * level
    return f'wrk.method = "POST"\nwrk.body = [{eq}[{text}]{eq}]\n'



# -- wrk ------------------------------------------------------------------------------------------

def _run_wrk(url: str, connections: int, duration_s: float, threads: int, headers: dict[str, str],
             body: bytes | None) -> LoadResult:
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        f.write((_lua_post(body) if body is not None else "") + WRK_SCRIPT)
        script = f.name
    try:
        out = subprocess.run([wrk_path() or "wrk", f"-t{threads}", f"-c{connections}", f"-d{duration_s:g}s",
                              "--timeout", "5s", "-s", script,
                              *(arg for k, v in headers.items() for arg in ("-H", f"{k}: {v}")), url],
                             capture_output=True, text=True, timeout=duration_s + 60)
    finally:
        os.unlink(script)
    if out.returncode != 0:
        raise RuntimeError(f"wrk failed ({out.returncode}): {out.stderr or out.stdout}")
    line = next((s for s in out.stdout.splitlines() if s.startswith("WRK_JSON ")), None)
    if line is None:
        raise RuntimeError(f"wrk printed no summary:\n{out.stdout}\n{out.stderr}")
    s = json.loads(line[len("WRK_JSON "):])
    return LoadResult("wrk", s["requests"], s["status"], s["connect"] + s["read"] + s["write"] + s["timeout"],
                      s["duration_us"] / 1e6, s["p50_us"] / 1e3, s["p99_us"] / 1e3,
                      s["bytes"] / s["requests"] if s["requests"] else 0.0)


# -- python fallback ------------------------------------------------------------------------------

def _run_python(url: str, connections: int, duration_s: float, processes: int,
                headers: dict[str, str], body: bytes | None) -> LoadResult:
    """``processes`` child processes (``python -m bench.loadgen``), each driving its share of the
    connections from one asyncio loop; each prints its latencies as JSON on stdout."""
    processes = max(1, min(processes, connections))
    shares = [connections // processes + (1 if i < connections % processes else 0) for i in range(processes)]
    root = str(Path(__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)}
    children = [subprocess.Popen([sys.executable, "-m", "bench.loadgen", url, str(n), str(duration_s),
                                  json.dumps(headers), (body or b"").decode()],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) for n in shares]
    parts = []
    try:
        for child in children:
            out, err = child.communicate(timeout=duration_s + 60)
            if child.returncode != 0:
                raise RuntimeError(f"load generator process failed ({child.returncode}): {err.decode()[-2000:]}")
            parts.append(json.loads(out))
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait()
    latencies = sorted(us for p in parts for us in p["latencies_us"])
    requests = len(latencies)
    return LoadResult("python", requests, sum(p["non_2xx"] for p in parts), sum(p["errors"] for p in parts),
                      max(p["elapsed"] for p in parts), percentile(latencies, 50) / 1e3,
                      percentile(latencies, 99) / 1e3, sum(p["bytes"] for p in parts) / requests if requests else 0.0)


def _worker(url: str, connections: int, duration_s: float, headers: dict[str, str], body: bytes | None) -> dict:
    try:
        import uvloop
        uvloop.install()
    except ImportError:
        pass
    return asyncio.run(_worker_main(url, connections, duration_s, headers, body))


async def _worker_main(url: str, connections: int, duration_s: float, headers: dict[str, str],
                       body: bytes | None) -> dict:
    parts = urlsplit(url)
    host, port = parts.hostname, parts.port or 80
    method = "GET" if body is None else "POST"
    if body is not None:
        headers = {**headers, "Content-Length": str(len(body))}
    request = (f"{method} {parts.path or '/'} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
               f"Connection: keep-alive\r\nAccept: application/json\r\n"
               + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n").encode() + (body or b"")
    result = {"latencies_us": [], "non_2xx": 0, "errors": 0, "bytes": 0}
    start = time.perf_counter()
    deadline = start + duration_s
    await asyncio.gather(*(_connection(host, port, request, deadline, result) for _ in range(connections)))
    result["elapsed"] = time.perf_counter() - start
    return result


MAX_REQUESTS_PER_CONNECTION = 10_000_000  # the deadline ends the loop first; this is just a bound


async def _connection(host: str, port: int, request: bytes, deadline: float, result: dict) -> None:
    latencies = result["latencies_us"]
    reader = writer = None
    for _ in range(MAX_REQUESTS_PER_CONNECTION):
        if time.perf_counter() >= deadline:
            break
        try:
            if writer is None:
                reader, writer = await asyncio.open_connection(host, port)
            t0 = time.perf_counter()
            writer.write(request)
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
            status = int(head[9:12])
            length = 0
            for line in head.split(b"\r\n")[1:]:
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:])
                    break
            if length:
                await asyncio.wait_for(reader.readexactly(length), 5)
            latencies.append(round((time.perf_counter() - t0) * 1e6))
            result["bytes"] += len(head) + length
            if not (200 <= status < 300 or status == 304):
                result["non_2xx"] += 1
        except (TimeoutError, OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            result["errors"] += 1
            if writer is not None:
                writer.close()
            reader = writer = None
            await asyncio.sleep(0.01)
    if writer is not None:
        writer.close()


if __name__ == "__main__":  # one process of the Python fallback: URL CONNECTIONS SECONDS HEADERS [POST-BODY]
    post = sys.argv[5].encode() if len(sys.argv) > 5 and sys.argv[5] else None
    print(json.dumps(_worker(sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), json.loads(sys.argv[4]), post)))
