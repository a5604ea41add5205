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
import sys
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # harness/, the process helpers shared with the tests and the bench
    sys.path.append(str(ROOT))

from harness import processes  # noqa: E402

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
    return processes.cached_tool("LAKELEDGER_MINIO", ".cache/minio/bin/minio")


class Minio(processes.Minio):
    """MinIO (`make minio-deps`) on 127.0.0.1:9000 with its own data directory and the suite's bucket."""

    def __init__(self, binary: Path, home: Path):
        home.mkdir(parents=True, exist_ok=True)
        super().__init__(binary, home / "data", PORT, home / "minio.log", USER, PASSWORD, interval=0.2)
        self._make_bucket()

    def _make_bucket(self) -> None:
        import boto3
        from botocore.config import Config

        boto3.client("s3", endpoint_url=f"http://127.0.0.1:{PORT}", region_name="us-east-1", aws_access_key_id=USER,
                     aws_secret_access_key=PASSWORD,
                     config=Config(s3={"addressing_style": "path"})).create_bucket(Bucket=BUCKET)


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
