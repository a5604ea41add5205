"""The S3 section: a MinIO of the bench's own (``make minio-deps``), an STS-enabled S3 warehouse on it, and the
two things an engine asks of an S3 table on every read: loadTable with vended credentials (served from the
credential cache) and the remote signer.

What is timed is compared, in the same run, with loadTable of a file-warehouse table of as many snapshots."""

import uuid
from dataclasses import dataclass
from pathlib import Path

import httpx
import orjson

from harness import processes

from . import catalog
from .procs import LOOPBACK, START_TIMEOUT_S, STOP_TIMEOUT_S, free_port

BUCKET = "lakeledger-bench"
REGION = "us-east-1"
DELEGATION = "X-Iceberg-Access-Delegation"
VENDED = {DELEGATION: "vended-credentials"}
SIGNING = {DELEGATION: "remote-signing"}


def minio_path() -> Path | None:
    return processes.cached_tool("LAKELEDGER_MINIO", ".cache/minio/bin/minio")


class Minio(processes.Minio):
    """MinIO on a free loopback port with its own data directory (the same set-up as tests/support.py's)."""

    user = "lakeledger-bench"
    password = "lakeledger-bench-secret-0123456789"
    stop_grace = STOP_TIMEOUT_S

    def __init__(self, binary: Path, home: Path):
        super().__init__(binary, home / "minio-data", free_port(), home / "minio.log", self.user, self.password,
                         timeout=START_TIMEOUT_S, interval=0.2)

    def make_bucket(self, name: str) -> None:
        import boto3
        from botocore.config import Config

        boto3.client("s3", endpoint_url=self.endpoint, region_name=REGION, aws_access_key_id=self.user,
                     aws_secret_access_key=self.password,
                     config=Config(s3={"addressing_style": "path"})).create_bucket(Bucket=name)

    def __repr__(self) -> str:
        return f"MinIO(pid {self.process.pid}, {self.endpoint})"


@dataclass
class S3Setup:
    table: catalog.TableHandle      # the S3 table, as many snapshots as the file one
    vended_body_bytes: int          # its loadTable answer with vended credentials
    signer_url: str                 # POST here: s3.signer.uri + "/" + s3.signer.endpoint
    sign_body: bytes                # a GET of the table's current metadata file


def create_warehouse(http: httpx.Client, minio: Minio) -> str:
    name = f"bench-s3-{uuid.uuid4().hex[:8]}"
    r = catalog.check(http.post("/management/v1/warehouse", json={
        "warehouse-name": name,
        "storage-profile": {"type": "s3", "bucket": BUCKET, "key-prefix": name, "endpoint": minio.endpoint,
                            "region": REGION, "path-style-access": True, "flavor": "s3-compat",
                            "sts-enabled": True},
        "storage-credential": {"type": "s3", "credential-type": "access-key", "aws-access-key-id": minio.user,
                               "aws-secret-access-key": minio.password}}), 200, 201)
    return r.json()["warehouse-id"]


def prepare(http: httpx.Client, minio: Minio, snapshots: int) -> S3Setup:
    """The S3 table with ``snapshots`` commits, checked to vend cached credentials and to sign for MinIO."""
    minio.make_bucket(BUCKET)
    wh = create_warehouse(http, minio)
    catalog.create_namespace(http, wh, "bench")
    table = catalog.create_table(http, wh, "bench", "load_me")
    for _ in range(snapshots):
        catalog.commit_snapshot(http, table)

    first = catalog.check(http.get(table.path, headers=VENDED), 200)
    second = catalog.check(http.get(table.path, headers=VENDED), 200)
    loaded = orjson.loads(first.content)
    if len(loaded["metadata"].get("snapshots", [])) != snapshots:
        raise RuntimeError(f"the S3 table has {len(loaded['metadata'].get('snapshots', []))} snapshots, "
                           f"expected {snapshots}")
    tokens = [orjson.loads(r.content)["config"].get("s3.session-token") for r in (first, second)]
    if not tokens[0] or tokens[0] != tokens[1] or not loaded.get("storage-credentials"):
        raise RuntimeError("loadTable with vended-credentials did not answer one cached STS credential twice")

    config = orjson.loads(catalog.check(http.get(table.path, headers=SIGNING), 200).content)["config"]
    if config.get("s3.remote-signing-enabled") != "true":
        raise RuntimeError(f"loadTable with remote-signing gave no signer: {config}")
    signer_url = f"{config['s3.signer.uri']}/{config['s3.signer.endpoint']}"
    key = loaded["metadata-location"].split("/", 3)[3]
    object_uri = f"{minio.endpoint}/{BUCKET}/{key}"
    sign_body = orjson.dumps({"region": REGION, "method": "GET", "uri": object_uri,
                              "headers": {"Host": [f"{LOOPBACK}:{minio.port}"]}})
    # the signature must be one MinIO accepts, or the figure would time a signer that does not work
    signed = catalog.check(http.post(signer_url, content=sign_body,
                                     headers={"content-type": "application/json"}), 200).json()
    got = httpx.get(signed["uri"], headers={k: v[0] for k, v in signed["headers"].items()}, timeout=10)
    if got.status_code != 200 or b'"table-uuid"' not in got.content:
        raise RuntimeError(f"MinIO refused the signed request: {got.status_code} {got.text[:300]}")
    return S3Setup(table, len(first.content), signer_url, sign_body)
