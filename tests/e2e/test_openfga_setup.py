"""`lakeledger migrate` sets up OpenFGA (a real one, memory datastore): the store once, found again by name, and
a model version only when the model changed; `serve` with the openfga backend refuses to start without them."""

import os
import subprocess
import sys
import uuid

import psycopg
import pytest
from support import OpenFgaServer, Server, create_database

from lakeledger.authz import setup as authz_setup
from lakeledger.authz.model import authorization_model, normalized
from lakeledger.authz.openfga import sync_client
from lakeledger.settings import Settings


def _env(database: str, endpoint: str, store: str, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKELEDGER__")}
    return {**env, "LAKELEDGER__PG_URL": database, "LAKELEDGER__AUTHZ_BACKEND": "openfga",
            "LAKELEDGER__OPENFGA__ENDPOINT": endpoint, "LAKELEDGER__OPENFGA__STORE_NAME": store,
            "LAKELEDGER__LOG_LEVEL": "warning", **extra}


def _lakeledger(env: dict, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lakeledger.cli", *args], env=env, capture_output=True, text=True,
                          timeout=timeout)


def _stores(endpoint: str, name: str, api_key: str | None = None) -> list:
    client = sync_client(endpoint, api_key)
    try:
        return [s for s in client.list_stores({"name": name}).stores if s.name == name]
    finally:
        client.close()


def _models(endpoint: str, store_id: str) -> list:
    client = sync_client(endpoint, store_id=store_id)
    try:
        return client.read_authorization_models().authorization_models
    finally:
        client.close()


def _row(database: str, store: str):
    with psycopg.connect(database) as conn:
        return conn.execute("SELECT store_id, model_id FROM ll_openfga WHERE store_name = %s", (store,)).fetchone()


def _store_name() -> str:
    return f"ll-{uuid.uuid4().hex[:12]}"


def test_migrate_creates_the_store_and_model_once(openfga, database):
    store = _store_name()
    env = _env(database, openfga.endpoint, store)
    first = _lakeledger(env, "migrate")
    assert first.returncode == 0, first.stderr
    assert f"OpenFGA store {store}" in first.stdout and "OpenFGA authorization model" in first.stdout
    [created] = _stores(openfga.endpoint, store)
    store_id, model_id = _row(database, store)
    assert store_id == created.id
    [model] = _models(openfga.endpoint, store_id)
    assert model.id == model_id
    assert normalized(model.to_dict()) == normalized(authorization_model())

    again = _lakeledger(env, "migrate")
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == "applied: nothing (up to date)"
    assert [s.id for s in _stores(openfga.endpoint, store)] == [store_id]
    assert [m.id for m in _models(openfga.endpoint, store_id)] == [model_id]
    assert _row(database, store) == (store_id, model_id)


def test_another_database_finds_the_store_by_name_and_keeps_its_model(openfga, database, pg_url):
    store = _store_name()
    assert _lakeledger(_env(database, openfga.endpoint, store), "migrate").returncode == 0
    store_id, model_id = _row(database, store)
    other = create_database(pg_url, f"own_{uuid.uuid4().hex[:12]}")
    result = _lakeledger(_env(other, openfga.endpoint, store), "migrate")
    assert result.returncode == 0, result.stderr
    assert "OpenFGA" not in result.stdout
    assert _row(other, store) == (store_id, model_id)
    assert len(_stores(openfga.endpoint, store)) == 1


def test_a_changed_model_is_written_as_a_new_version(openfga, database, monkeypatch):
    store = _store_name()
    env = _env(database, openfga.endpoint, store)
    assert _lakeledger(env, "migrate").returncode == 0
    store_id, first_model = _row(database, store)
    for key in [k for k in os.environ if k.startswith("LAKELEDGER__")]:
        monkeypatch.delenv(key)
    for key, value in env.items():
        if key.startswith("LAKELEDGER__"):
            monkeypatch.setenv(key, value)
    settings = Settings()

    def changed():
        model = authorization_model()
        table = next(t for t in model["type_definitions"] if t["type"] == "table")
        table["relations"]["can_drop"] = {"computedUserset": {"relation": "ownership"}}
        return model

    monkeypatch.setattr(authz_setup, "authorization_model", changed)
    with psycopg.connect(database, autocommit=True) as conn:
        written = authz_setup.set_up_openfga(conn, settings)
        assert (written.store_id, written.created_store, written.wrote_model) == (store_id, False, True)
        assert written.model_id != first_model
        assert _row(database, store) == (store_id, written.model_id)
        assert authz_setup.set_up_openfga(conn, settings).wrote_model is False
        # the process that runs the older model now refuses to start until migrate is run with its model
        monkeypatch.setattr(authz_setup, "authorization_model", authorization_model)
        with pytest.raises(authz_setup.AuthorizationSetupError, match="not this version's"):
            authz_setup.authorizer(settings, database)
        back = authz_setup.set_up_openfga(conn, settings)
    assert back.wrote_model and back.model_id not in (first_model, written.model_id)
    assert [m.id for m in _models(openfga.endpoint, store_id)] == [back.model_id, written.model_id, first_model]


def test_serve_without_a_store_and_without_auto_migrate_says_to_migrate(openfga, database):
    result = _lakeledger(_env(database, openfga.endpoint, _store_name(), LAKELEDGER__AUTO_MIGRATE="false"), "serve",
                         timeout=60)
    assert result.returncode == 1
    assert "run `lakeledger migrate`" in result.stderr
    assert "Traceback" not in result.stderr


def test_serve_refuses_a_store_openfga_no_longer_has(openfga, database):
    store = _store_name()
    env = _env(database, openfga.endpoint, store)
    assert _lakeledger(env, "migrate").returncode == 0
    store_id, _ = _row(database, store)
    client = sync_client(openfga.endpoint, store_id=store_id)
    client.delete_store()
    client.close()
    result = _lakeledger({**env, "LAKELEDGER__AUTO_MIGRATE": "false"}, "serve", timeout=60)
    assert result.returncode == 1
    assert f"has no store {store_id}" in result.stderr and "run `lakeledger migrate`" in result.stderr
    # migrating again creates a store under the same name, and the server starts on it
    again = _lakeledger(env, "migrate")
    assert again.returncode == 0 and f"OpenFGA store {store}" in again.stdout
    assert _row(database, store)[0] != store_id


def test_serve_with_openfga_starts_after_migrating_itself(openfga, database, tmp_path):
    store = _store_name()
    env = _env(database, openfga.endpoint, store)
    server = Server(database, tmp_path, **{k: v for k, v in env.items() if k.startswith("LAKELEDGER__")
                                           and k != "LAKELEDGER__PG_URL"})
    try:
        assert server.process.poll() is None
        assert _row(database, store) is not None
    finally:
        assert server.stop() == 0


def test_migrate_with_the_pre_shared_key_openfga_requires(database, tmp_path):
    key = "lakeledger-openfga-test-key"
    guarded = OpenFgaServer(tmp_path / "openfga", preshared_key=key)
    try:
        store = _store_name()
        refused = _lakeledger(_env(database, guarded.endpoint, store), "migrate")
        assert refused.returncode == 1
        assert f"OpenFGA at {guarded.endpoint} could not be set up" in refused.stderr
        assert "Traceback" not in refused.stderr
        done = _lakeledger(_env(database, guarded.endpoint, store, LAKELEDGER__OPENFGA__API_KEY=key), "migrate")
        assert done.returncode == 0, done.stderr
        assert key not in done.stdout + done.stderr
        assert len(_stores(guarded.endpoint, store, key)) == 1
    finally:
        guarded.stop()


def test_migrate_says_when_openfga_cannot_be_reached(database):
    from support import free_port

    endpoint = f"http://127.0.0.1:{free_port()}"
    result = _lakeledger(_env(database, endpoint, _store_name()), "migrate")
    assert result.returncode == 1
    assert f"OpenFGA at {endpoint} could not be set up" in result.stderr
    assert "Traceback" not in result.stderr
