"""The S3 side of `make conformance` (scripts/conformance.py): the MinIO that pyiceberg's integration suite expects,
and the S3 warehouse its second pass uses as the default warehouse.

pyiceberg's fixtures hardcode MinIO at localhost:9000 with the keys admin/password (``session_catalog``'s
``s3.endpoint``, ``s3.access-key-id``, ``s3.secret-access-key``), and some tests write their files straight to
``s3://warehouse/...``; so MinIO listens there, with that root user, and has a bucket ``warehouse``.

The S3 warehouse keeps its tables in that bucket (under ``KEY_PREFIX``) with STS off: tables then come with the
remote-signing config, which pyiceberg's default PyArrowFileIO does not use, so the suite reaches its files with its
own admin keys, as it does against the reference server (which vends nothing). With STS on it would get
credentials confined to each table, and its writes to ``s3://warehouse/<namespace>/...`` (outside every table)
would be refused by MinIO, by design."""

import json
import os
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PORT = 9000
ENDPOINT = f"http://localhost:{PORT}"
USER = "admin"
PASSWORD = "password"
BUCKET = "warehouse"
KEY_PREFIX = "lakeledger"
WAREHOUSE = "s3"
# the S3 pass's server keeps the warehouse's credential in its secret store, encrypted with this key
ENCRYPTION_KEY = "lakeledger-conformance-encryption-key"


def minio_binary() -> Path | None:
    binary = Path(os.environ.get("LAKELEDGER_MINIO", ROOT / ".cache/minio/bin/minio"))
    return binary if binary.exists() else None


class Minio:
    """MinIO (`make minio-deps`) on 127.0.0.1:9000 with its own data directory and the suite's bucket."""

    def __init__(self, binary: Path, home: Path):
        home.mkdir(parents=True, exist_ok=True)
        self.log_path = home / "minio.log"
        self._log = open(self.log_path, "wb")
        env = {**os.environ, "MINIO_ROOT_USER": USER, "MINIO_ROOT_PASSWORD": PASSWORD, "MINIO_BROWSER": "off",
               "MINIO_UPDATE": "off", "MINIO_CI_CD": "1"}
        self.process = subprocess.Popen([str(binary), "server", str(home / "data"), "--address", f"127.0.0.1:{PORT}",
                                         "--quiet"], env=env, stdout=self._log, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"MinIO exited at start:\n{self.tail()}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{PORT}/minio/health/live", timeout=1) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                time.sleep(0.2)
        else:
            self.stop()
            raise RuntimeError(f"MinIO did not become ready in 60 s:\n{self.tail()}")
        self._make_bucket()

    def _make_bucket(self) -> None:
        import boto3
        from botocore.config import Config

        boto3.client("s3", endpoint_url=f"http://127.0.0.1:{PORT}", region_name="us-east-1", aws_access_key_id=USER,
                     aws_secret_access_key=PASSWORD,
                     config=Config(s3={"addressing_style": "path"})).create_bucket(Bucket=BUCKET)

    def tail(self) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")[-3000:]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self._log.close()


def warehouse_body() -> dict:
    return {"warehouse-name": WAREHOUSE,
            "storage-profile": {"type": "s3", "bucket": BUCKET, "key-prefix": KEY_PREFIX, "endpoint": ENDPOINT,
                                "region": "us-east-1", "path-style-access": True, "flavor": "s3-compat",
                                "sts-enabled": False},
            "storage-credential": {"type": "s3", "credential-type": "access-key", "aws-access-key-id": USER,
                                   "aws-secret-access-key": PASSWORD}}


def _call(method: str, url: str, body: dict | None, expected: int) -> dict:
    request = urllib.request.Request(url, method=method, data=json.dumps(body).encode() if body is not None else None,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            if answer.status != expected:
                raise RuntimeError(f"{method} {url} answered {answer.status}")
            return json.loads(answer.read() or b"{}")
    except urllib.error.HTTPError as e:
        raise RuntimeError(f"{method} {url} answered {e.code}: {e.read().decode(errors='replace')}") from None


def create_warehouse(catalog_url: str) -> None:
    """The S3 warehouse, through the management API (which first proves access to the bucket)."""
    _call("POST", f"{catalog_url}/management/v1/warehouse", warehouse_body(), 201)


def create_namespace(catalog_url: str, name: str) -> None:
    """A namespace in the default warehouse: the file pass's PySpark provisioning creates ``default``, which the
    suite's tests create their tables in."""
    prefix = _call("GET", f"{catalog_url}/catalog/v1/config", None, 200)["overrides"]["prefix"]
    _call("POST", f"{catalog_url}/catalog/v1/{prefix}/namespaces", {"namespace": [name]}, 200)
