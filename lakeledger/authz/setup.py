"""The OpenFGA store and authorization model: set up by ``lakeledger migrate``, found again by every process.

The store is known by its name (``LAKELEDGER__OPENFGA__STORE_NAME``): found if it exists, created once otherwise.
A new model version is written only when ours differs from the store's latest, so migrating again changes
nothing. The store and model ids go into ``ll_openfga``, which is how every process of one installation uses the
same store and the same model version."""

from dataclasses import dataclass

import psycopg

from lakeledger.authz.authorizer import AllowAll, AuthorizationUnavailable, Authorizer
from lakeledger.authz.model import authorization_model, digest, normalized

# openfga_sdk (with aiohttp and OpenTelemetry, ~12 MB resident) is imported only where OpenFGA is used


class AuthorizationSetupError(RuntimeError):
    """The configured backend cannot be used as it is; the message says what to do."""


@dataclass(frozen=True)
class StoreAndModel:
    store_id: str
    model_id: str
    created_store: bool
    wrote_model: bool


def _secret(settings) -> str | None:
    key = settings.openfga.api_key
    return key.get_secret_value() if key else None


def set_up_openfga(conn, settings) -> StoreAndModel:
    """Makes sure the store exists and holds our model as its latest version; records both ids. ``conn`` is an
    autocommit psycopg connection (migrate's, which holds the migration lock, so that two processes migrating at
    once do not both create a store)."""
    name, endpoint = settings.openfga.store_name, settings.openfga.endpoint
    from openfga_sdk.models import CreateStoreRequest

    from lakeledger.authz.openfga import sync_client

    model = authorization_model()
    client = sync_client(endpoint, _secret(settings))
    try:
        row = conn.execute("SELECT store_id FROM ll_openfga WHERE store_name = %s", (name,)).fetchone()
        store_id, created = _find_store(client, name, row[0] if row else None)
        if store_id is None:
            store_id, created = client.create_store(CreateStoreRequest(name=name)).id, True
        client.set_store_id(store_id)
        latest = client.read_authorization_models({"page_size": 1}).authorization_models
        if latest and normalized(latest[0].to_dict()) == normalized(model):
            model_id, wrote = latest[0].id, False
        else:
            # the SDK serialises a dict body as it is; its annotation names only its model class
            model_id, wrote = client.write_authorization_model(model).authorization_model_id, True  # type: ignore[arg-type]
    except AuthorizationSetupError:
        raise
    except Exception as e:
        raise AuthorizationSetupError(f"OpenFGA at {endpoint} could not be set up: {e}") from e
    finally:
        client.close()
    conn.execute(
        "INSERT INTO ll_openfga (store_name, endpoint, store_id, model_id, model_digest) VALUES (%s, %s, %s, %s, %s)"
        " ON CONFLICT (store_name) DO UPDATE SET endpoint = excluded.endpoint, store_id = excluded.store_id,"
        " model_id = excluded.model_id, model_digest = excluded.model_digest, written_at = now()"
        " WHERE (ll_openfga.endpoint, ll_openfga.store_id, ll_openfga.model_id, ll_openfga.model_digest)"
        " IS DISTINCT FROM (excluded.endpoint, excluded.store_id, excluded.model_id, excluded.model_digest)",
        (name, endpoint, store_id, model_id, digest(model)))
    return StoreAndModel(store_id, model_id, created, wrote)


def _find_store(client, name: str, known_id: str | None) -> tuple[str | None, bool]:
    """The store recorded before, if OpenFGA still has it (a memory datastore forgets everything when it
    restarts), else the oldest store of that name."""
    stores, token = [], None
    while True:
        options = {"name": name, "page_size": 100, **({"continuation_token": token} if token else {})}
        page = client.list_stores(options)
        stores += [s for s in page.stores if s.name == name and not s.deleted_at]
        token = page.continuation_token
        if not token:
            break
    if known_id and any(s.id == known_id for s in stores):
        return known_id, False
    stores.sort(key=lambda s: s.created_at)
    return (stores[0].id if stores else None), False


def authorizer(settings, conninfo: str) -> Authorizer:
    """The backend ``LAKELEDGER__AUTHZ_BACKEND`` names. For OpenFGA, the store and model that ``migrate`` recorded
    (read through ``conninfo``), checked to exist there and to be this version's model."""
    if settings.authz_backend == "allowall":
        return AllowAll()
    from lakeledger.authz.openfga import OpenFga, sync_client

    name, endpoint = settings.openfga.store_name, settings.openfga.endpoint
    with psycopg.connect(conninfo, autocommit=True) as conn:
        found = conn.execute("SELECT to_regclass('ll_openfga') IS NOT NULL").fetchone()
        assert found is not None  # an expression's one row
        exists = found[0]
        row = exists and conn.execute("SELECT store_id, model_id, model_digest FROM ll_openfga"
                                      " WHERE store_name = %s", (name,)).fetchone()
    if not row:
        raise AuthorizationSetupError(f"no OpenFGA store {name!r} is recorded: run `lakeledger migrate` "
                                      "(or start with LAKELEDGER__AUTO_MIGRATE=true)")
    store_id, model_id, recorded = row
    if recorded != digest(authorization_model()):
        raise AuthorizationSetupError(f"the authorization model in OpenFGA store {name!r} is not this version's: "
                                      "run `lakeledger migrate`")
    client = sync_client(endpoint, _secret(settings), store_id, model_id)
    try:
        client.get_store()  # a deleted store still answers for its models; only this says it is gone
        client.read_authorization_model()
    except Exception as e:
        raise AuthorizationSetupError(
            f"OpenFGA at {endpoint} has no store {store_id} with model {model_id} ({e}); a memory datastore loses "
            "them when it restarts: run `lakeledger migrate`") from e
    finally:
        client.close()
    return OpenFga(endpoint, store_id, model_id, _secret(settings))


__all__ = ["AuthorizationSetupError", "AuthorizationUnavailable", "StoreAndModel", "authorizer", "set_up_openfga"]
