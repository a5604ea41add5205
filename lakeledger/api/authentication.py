"""Authentication as plain ASGI middleware, right inside RequestContext: with an OpenID provider configured, every
request but ``/health`` needs ``Authorization: Bearer <token>``; the token's principal goes into
``scope["state"]["principal"]`` for everything after (routes, the loadTable fast path, provenance). Without a
provider this middleware is not installed and requests run as the anonymous principal (lakeledger/api/context.py).

A token seen before is answered from identity's cache of verified tokens (a dictionary lookup): the hot read path
pays no signature check. Only a new token is verified, on a worker thread, since fetching the provider's keys
blocks. A principal not seen lately is provisioned as a user (lakeledger/services/users.py) before its request runs, as
Lakekeeper does on a first authenticated request."""

from typing import TYPE_CHECKING

from starlette.concurrency import run_in_threadpool

from lakeledger.api.errors import error_response
from lakeledger.identity.openid_settings import InvalidToken, ProviderUnavailable
from lakeledger.services.users import UserService

if TYPE_CHECKING:
    from lakeledger.identity.oidc import OpenIdProviders

# probes and scrapers carry no token (lakeledger/api/routers/operations.py)
OPEN_PATHS = frozenset({"/health", "/health/ready", "/metrics", "/ui"})
# the console's page, script and style (lakeledger/api/routers/console.py): a browser fetches them before anyone signs
# in
CONSOLE_FILES = ("/ui/",)
_AUTHORIZATION = b"authorization"
_REALM = 'Bearer realm="lakeledger"'


class Authentication:
    def __init__(self, app, verifier: "OpenIdProviders", users: UserService | None = None):
        self.app = app
        self.verifier = verifier
        self.users = users

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS or scope["path"].startswith(CONSOLE_FILES):
            return await self.app(scope, receive, send)
        values = [value for key, value in scope["headers"] if key == _AUTHORIZATION]
        if not values:
            return await _refuse(scope, receive, send, "This catalog needs an OpenID Connect access token: "
                                                      "send Authorization: Bearer <token>", None)
        if len(values) > 1:
            return await _refuse(scope, receive, send, "More than one Authorization header", "invalid_request")
        scheme, _, token = values[0].decode("latin-1").strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            return await _refuse(scope, receive, send, "The Authorization header must be Bearer <token>",
                                 "invalid_request")
        principal = self.verifier.cached(token)
        if principal is None:
            try:
                principal = await run_in_threadpool(self.verifier.verify, token)
            except InvalidToken as e:
                return await _refuse(scope, receive, send, str(e), "invalid_token")
            except ProviderUnavailable as e:
                # the provider, not the caller, is at fault: a retry may succeed (a 401 would make the client
                # throw its token away)
                return await error_response(503, "ServiceUnavailableException", str(e),
                                            head=scope["method"] == "HEAD")(scope, receive, send)
        state = scope.setdefault("state", {})
        state["principal"] = principal
        if self.users is not None and not self.users.is_known(principal):
            await run_in_threadpool(self.users.provision, principal, state.get("request_id"))
        await self.app(scope, receive, send)


async def _refuse(scope, receive, send, message: str, error: str | None):
    response = error_response(401, "NotAuthorizedException", message, head=scope["method"] == "HEAD")
    # RFC 6750 §3: a missing token gets the bare challenge, a bad one says why
    description = message.replace('"', "'")
    response.headers["www-authenticate"] = _REALM if error is None else \
        f'{_REALM}, error="{error}", error_description="{description}"'
    await response(scope, receive, send)
