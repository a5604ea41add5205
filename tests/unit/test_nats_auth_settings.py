"""NATS authentication settings (lakeledger/sinks/nats_auth.py): one way at a time, user and password together, a
credentials file that exists; the secrets reach nats-py's connect and nothing else."""

import pytest
from pydantic import ValidationError

from lakeledger.settings import Settings
from lakeledger.sinks.nats_auth import connect_options


def _settings(**env) -> Settings:
    return Settings(**env)


def test_none_by_default():
    assert connect_options(_settings()) == {}


def test_user_and_password():
    s = _settings(nats_user="u", nats_password="p4ss")
    assert connect_options(s) == {"user": "u", "password": "p4ss"}
    assert "p4ss" not in repr(s) and "p4ss" not in str(s.model_dump())


def test_token():
    assert connect_options(_settings(nats_token="t0k")) == {"token": "t0k"}


def test_credentials_file(tmp_path):
    creds = tmp_path / "user.creds"
    creds.write_text("-----BEGIN NATS USER JWT-----\n...\n")
    assert connect_options(_settings(nats_creds_file=creds)) == {"user_credentials": str(creds)}


@pytest.mark.parametrize("env, message", [
    ({"nats_user": "u"}, "go together"),
    ({"nats_password": "p"}, "go together"),
    ({"nats_user": "u", "nats_password": "p", "nats_token": "t"}, "set one NATS authentication"),
    ({"nats_creds_file": "/no/such/file.creds"}, "not a readable file"),
])
def test_refused(env, message):
    with pytest.raises(ValidationError, match=message):
        _settings(**env)
