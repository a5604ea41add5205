"""The README's client snippets work as written (only the server address is this test's); the manual's home page
includes the same blocks from the README (docs/index.md), so this is what both show."""

import re
import subprocess
import sys

import pytest
from support import ROOT, Server


@pytest.fixture(scope="module")
def demo_server(pg_url, tmp_path_factory):
    s = Server(pg_url, tmp_path_factory.mktemp("readme"), LAKELEDGER__DEFAULT_WAREHOUSE="demo")
    yield s
    s.stop()


def _snippet(marker: str) -> str:
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    return next(b for b in blocks if marker in b)


def _run(code: str, server: Server) -> str:
    code = code.replace("http://localhost:8181", server.url)
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def test_pyiceberg_snippet(demo_server):
    assert _run(_snippet("RestCatalog"), demo_server).split() == ["2"]


@pytest.mark.spark
def test_pyspark_snippet(demo_server):
    jar = ROOT / ".cache/jars/iceberg-spark-runtime-3.5_2.12-1.10.0.jar"
    if not jar.exists():
        pytest.fail("Iceberg's Spark runtime jar is missing: run `make spark-deps`")
    output = _run(_snippet("SparkSession"), demo_server)
    assert re.search(r"\|\s*2\|", output), output
