"""NATS as operators run it (issue 15, point 7): a nats-server that requires a user and password, a token, or (in
operator mode) a credentials file receives every event of the log as a CloudEvent from a `lakeledger serve` signed
in with LAKELEDGER__NATS_USER/_PASSWORD, LAKELEDGER__NATS_TOKEN or LAKELEDGER__NATS_CREDS_FILE; with a wrong password
or an unknown account's credentials nothing is published, readiness names NATS, the publisher's failures are counted
in /metrics, and the password is in no log line."""

import os
import subprocess
import uuid
from pathlib import Path

import httpx
import jetstream_log
import pytest
from prometheus_client.parser import text_string_to_metric_families
from support import NatsServer, Server, create_database, wait_until

USER, PASSWORD, TOKEN = "lakeledger", f"nats-pw-{uuid.uuid4().hex[:12]}", f"nats-token-{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="module")
def nats_with_password(tmp_path_factory):
    server = NatsServer(tmp_path_factory.mktemp("nats-password"), "--user", USER, "--pass", PASSWORD)
    yield server
    server.kill()


@pytest.fixture(scope="module")
def nats_with_token(tmp_path_factory):
    server = NatsServer(tmp_path_factory.mktemp("nats-token"), "--auth", TOKEN)
    yield server
    server.kill()


def _serve(pg_url, tmp_path, address: str, **auth: str) -> tuple[Server, str]:
    database = create_database(pg_url, f"nats_auth_{uuid.uuid4().hex[:12]}")
    server = Server(database, tmp_path, LAKELEDGER__NATS_ADDRESS=address, LAKELEDGER__WORKER_POLL_SECONDS="0.2",
                    LAKELEDGER__PG_POOL_SIZE="2", LAKELEDGER__LOG_LEVEL="info", **auth)
    return server, database


def _publishes_every_event(server: Server, database: str, stream_url: str, tmp_path) -> None:
    r = httpx.post(f"{server.url}/management/v1/warehouse", json={
        "warehouse-name": "signed-in", "storage-profile": {"type": "file", "location": f"file://{tmp_path}/wh"}})
    assert r.status_code == 201, r.text
    wait_until(lambda: jetstream_log.count(stream_url) == jetstream_log.head(database), 20,
               "every event to be published")
    published = [m["headers"]["Nats-Msg-Id"] for m in jetstream_log.stream(stream_url)]
    assert published == [event_id for _, event_id in jetstream_log.log_ids(database)]
    ready = httpx.get(f"{server.url}/health/ready")
    assert ready.status_code == 200 and ready.json()["checks"]["nats"] == "ok", ready.text


def test_user_and_password(pg_url, nats_with_password, tmp_path):
    server, database = _serve(pg_url, tmp_path, nats_with_password.url, LAKELEDGER__NATS_USER=USER,
                              LAKELEDGER__NATS_PASSWORD=PASSWORD)
    try:
        port = nats_with_password.port
        _publishes_every_event(server, database, f"nats://{USER}:{PASSWORD}@127.0.0.1:{port}", tmp_path)
    finally:
        server.stop()
    assert PASSWORD not in server.log_path.read_text()


def test_token(pg_url, nats_with_token, tmp_path):
    server, database = _serve(pg_url, tmp_path, nats_with_token.url, LAKELEDGER__NATS_TOKEN=TOKEN)
    try:
        _publishes_every_event(server, database, f"nats://{TOKEN}@127.0.0.1:{nats_with_token.port}", tmp_path)
    finally:
        server.stop()
    assert TOKEN not in server.log_path.read_text()


def test_a_wrong_password_publishes_nothing_and_says_so(pg_url, nats_with_password, tmp_path):
    wrong = f"wrong-{uuid.uuid4().hex[:12]}"
    server, database = _serve(pg_url, tmp_path, nats_with_password.url, LAKELEDGER__NATS_USER=USER,
                              LAKELEDGER__NATS_PASSWORD=wrong, LAKELEDGER__NATS_STREAM="WRONG_PASSWORD",
                              LAKELEDGER__NATS_SUBJECT="wrong")
    try:
        r = httpx.post(f"{server.url}/management/v1/warehouse", json={
            "warehouse-name": "refused", "storage-profile": {"type": "file", "location": f"file://{tmp_path}/wh"}})
        assert r.status_code == 201, r.text  # the catalog works; only its delivery waits

        def failures() -> float:
            text = httpx.get(f"{server.url}/metrics").text
            return sum(s.value for f in text_string_to_metric_families(text) for s in f.samples
                       if s.name == "lakeledger_cloudevents_failures_total")

        wait_until(lambda: failures() >= 2, 30, "the publisher's refused sign-ins to be counted")
        ready = httpx.get(f"{server.url}/health/ready")
        assert ready.status_code == 503 and ready.json()["failing"] == ["nats"], ready.text
        assert "authorization" in ready.json()["checks"]["nats"].lower()
        lag = [
            s.value
            for f in text_string_to_metric_families(httpx.get(f"{server.url}/metrics").text)
            for s in f.samples
            if s.name == "lakeledger_consumer_lag_events" and s.labels["consumer"] == "cloudevents"
        ]
        assert lag == [] or lag[0] == jetstream_log.head(database)  # nothing handed over
        assert jetstream_log.positions(database).get("cloudevents", 0) == 0
    finally:
        server.stop()
    assert wrong not in server.log_path.read_text()


def test_a_workers_process_publishes_with_a_token_and_serves_its_metrics(pg_url, nats_with_token, tmp_path):
    """`lakeledger workers` signs in as `serve` does, and with LAKELEDGER__METRICS_PORT exposes its own metrics:
    the CloudEvents it published, counted once each."""
    from support import WorkersProcess, free_port

    server, database = _serve(pg_url, tmp_path, nats_with_token.url, LAKELEDGER__WORKERS="off")
    port = free_port()
    workers = WorkersProcess(database, tmp_path, LAKELEDGER__NATS_ADDRESS=nats_with_token.url,
                             LAKELEDGER__NATS_TOKEN=TOKEN, LAKELEDGER__NATS_STREAM="FROM_WORKERS",
                             LAKELEDGER__NATS_SUBJECT="workers", LAKELEDGER__METRICS_PORT=str(port),
                             LAKELEDGER__LISTEN_HOST="127.0.0.1")
    try:
        r = httpx.post(f"{server.url}/management/v1/warehouse", json={
            "warehouse-name": "w", "storage-profile": {"type": "file", "location": f"file://{tmp_path}/wh"}})
        assert r.status_code == 201, r.text

        def published() -> float:
            try:
                text = httpx.get(f"http://127.0.0.1:{port}/metrics").text
            except httpx.HTTPError:
                return -1
            return sum(s.value for f in text_string_to_metric_families(text) for s in f.samples
                       if s.name == "lakeledger_cloudevents_published_total")

        head = jetstream_log.head(database)
        wait_until(lambda: published() == head, 30, "every event to be published and counted")
        text = httpx.get(f"http://127.0.0.1:{port}/metrics").text
        assert 'lakeledger_pg_pool_connections{pool="background",state="idle"}' in text
    finally:
        workers.stop()
        server.stop()
    assert TOKEN not in workers.log_path.read_text()



@pytest.fixture(scope="module")
def operator_mode(tmp_path_factory):
    """nats-server in operator mode: its configuration and two credentials files from the NATS project's own jwt
    and nkeys libraries (tests/nats_creds, built by `make nats-deps`)."""
    tool = Path(
        os.environ.get("LAKELEDGER_NATS_CREDS_TOOL", Path(__file__).parents[2] / ".cache/nats-creds/nats-creds")
    )
    if not tool.is_file():
        pytest.fail(f"{tool} is missing: run `make nats-deps`")
    home = tmp_path_factory.mktemp("nats-operator")
    subprocess.run([str(tool), str(home)], check=True, timeout=60)
    (home / "store").mkdir()
    server = NatsServer(home / "store", "-c", str(home / "server.conf"))
    yield server, home
    server.kill()


def test_credentials_file(pg_url, operator_mode, tmp_path):
    nats_server, home = operator_mode
    server, database = _serve(pg_url, tmp_path, nats_server.url, LAKELEDGER__NATS_CREDS_FILE=str(home / "user.creds"))
    try:
        r = httpx.post(f"{server.url}/management/v1/warehouse", json={
            "warehouse-name": "creds", "storage-profile": {"type": "file", "location": f"file://{tmp_path}/wh"}})
        assert r.status_code == 201, r.text
        wait_until(lambda: jetstream_log.positions(database).get("cloudevents") == jetstream_log.head(database), 20,
                   "every event to be published")
        ready = httpx.get(f"{server.url}/health/ready")
        assert ready.status_code == 200 and ready.json()["checks"]["nats"] == "ok", ready.text
    finally:
        server.stop()
    seed = [line for line in (home / "user.creds").read_text().splitlines() if line.startswith("SU")]
    assert seed and seed[0] not in server.log_path.read_text()

    stranger, _ = _serve(pg_url, tmp_path, nats_server.url, LAKELEDGER__NATS_CREDS_FILE=str(home / "stranger.creds"),
                         LAKELEDGER__NATS_STREAM="STRANGER", LAKELEDGER__NATS_SUBJECT="stranger")
    try:
        ready = httpx.get(f"{stranger.url}/health/ready")
        assert ready.status_code == 503 and ready.json()["failing"] == ["nats"], ready.text
        assert "authorization" in ready.json()["checks"]["nats"].lower()
    finally:
        stranger.stop()
