"""How Lakeledger signs in to NATS (``LAKELEDGER__NATS_USER``/``_PASSWORD``, ``_TOKEN`` or ``_CREDS_FILE``, the
ways Lakekeeper's ``LAKEKEEPER__NATS_*`` offer): the keyword arguments nats-py's ``connect`` takes for them. The
secrets stay in ``SecretStr`` until this call, so no settings dump or log line shows them."""

from typing import Any


def connect_options(settings) -> dict[str, Any]:
    if settings.nats_user:
        return {"user": settings.nats_user, "password": settings.nats_password.get_secret_value()}
    if settings.nats_token is not None:
        return {"token": settings.nats_token.get_secret_value()}
    if settings.nats_creds_file is not None:
        return {"user_credentials": str(settings.nats_creds_file)}
    return {}
