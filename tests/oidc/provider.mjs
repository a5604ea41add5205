// The OpenID provider the tests authenticate against: the npm library oidc-provider, configured for what engines do
// with a catalog (OAuth2 client credentials, RFC 9068 JWT access tokens for the catalog's audience).
//
//   node tests/oidc/provider.mjs   with OIDC_MODULES=<folder holding node_modules/oidc-provider> (make oidc-deps),
//   OIDC_PORT, OIDC_AUDIENCE (default "lakeledger"); optionally OIDC_TOKEN_PATH (default /token: Lakekeeper's
//   suite posts to Keycloak's /protocol/openid-connect/token) and OIDC_EXTRA_SCOPES (space-separated scopes engines
//   may ask for besides "catalog lakeledger", e.g. Lakekeeper's "lakekeeper trino"), and OIDC_GROUPS_FILE (a JSON
//   object of client id -> list of groups, read for every token issued: the token's `groups` claim, the provider's
//   directory as a test changes it)
//
// The library is imported from OIDC_MODULES because it is installed into the gitignored .cache/, not beside this
// script. Keys are made at start: every run of the provider is a different signer.
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const modules = process.env.OIDC_MODULES;
if (!modules) {
  console.error('OIDC_MODULES is not set: run `make oidc-deps` and point it at .cache/oidc');
  process.exit(2);
}
const { default: Provider } = await import(pathToFileURL(join(modules, 'node_modules/oidc-provider/lib/index.js')));

const port = Number(process.env.OIDC_PORT);
const audience = process.env.OIDC_AUDIENCE || 'lakeledger';
const tokenPath = process.env.OIDC_TOKEN_PATH || '/token';
const scopes = ['catalog lakeledger', process.env.OIDC_EXTRA_SCOPES || ''].join(' ').trim();
const issuer = `http://127.0.0.1:${port}`;
const groupsFile = process.env.OIDC_GROUPS_FILE || '';
const CATALOG = 'urn:lakeledger:catalog';
// A resource of another service on the same provider: its tokens are valid, signed by this provider, and not for us.
const OTHER = 'urn:lakeledger:other-service';

const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const jwk = { ...privateKey.export({ format: 'jwk' }), kid: randomUUID(), use: 'sig', alg: 'RS256' };

const client = (id, extra = {}) => ({
  client_id: id,
  client_secret: `${id}-secret`,
  grant_types: ['client_credentials'],
  redirect_uris: [],
  response_types: [],
  token_endpoint_auth_method: 'client_secret_post',
  ...extra,
});

const provider = new Provider(issuer, {
  clients: [
    client('spark'),
    client('bob'),
    // the session's Trino: its catalog lake_oidc (the owner) and lake_oidc_reader (a second principal)
    client('trino'),
    client('trino-reader'),
    // tokens that expire after two seconds, for the expiry tests
    client('brief'),
    // the web console: a public client signing people in with the authorization code and PKCE, redirected to any
    // loopback port's /ui (a "native" client's loopback redirect URIs match on any port, RFC 8252)
    {
      client_id: 'lakeledger-console',
      application_type: 'native',
      grant_types: ['authorization_code'],
      response_types: ['code'],
      redirect_uris: ['http://127.0.0.1/ui'],
      token_endpoint_auth_method: 'none',
    },
  ],
  // the console's script calls the token endpoint from the catalog's origin (a loopback port of its own)
  clientBasedCORS: (ctx, origin, c) => c.clientId === 'lakeledger-console' && /^http:\/\/127\.0\.0\.1:\d+$/.test(origin),
  clientDefaults: { token_endpoint_auth_method: 'client_secret_post' },
  jwks: { keys: [jwk] },
  extraTokenClaims: (ctx, token) => {
    if (!groupsFile) {
      return undefined;
    }
    const groups = JSON.parse(readFileSync(groupsFile, 'utf8'))[token.clientId];
    return groups ? { groups } : undefined;
  },
  routes: { token: tokenPath },
  features: {
    // the console's people sign in on the library's own login and consent pages (any login name, any password)
    devInteractions: { enabled: true },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      // engines send no resource parameter: their tokens are for the catalog
      defaultResource: () => CATALOG,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, resource, requester) => {
        if (resource !== CATALOG && resource !== OTHER) {
          throw new Error(`unknown resource ${resource}`);
        }
        return {
          scope: scopes,
          audience: resource === CATALOG ? audience : 'other-service',
          accessTokenFormat: 'jwt',
          accessTokenTTL: requester.clientId === 'brief' ? 2 : 3600,
          jwt: { sign: { alg: 'RS256' } },
        };
      },
    },
  },
});
provider.proxy = false;

// Iceberg 1.9's REST client (Trino 476's) fetches a catalog session's token with client_secret_post while sending
// the token it already holds as `Authorization: Bearer`. oidc-provider counts that header as a second client
// authentication and refuses the request; Keycloak, Okta and Entra ID read client credentials from a Basic header
// only and ignore a Bearer one. The token endpoint here does the same: a Bearer header there authenticates nothing.
provider.use(async (ctx, next) => {
  if (ctx.path === tokenPath && /^bearer /i.test(ctx.headers.authorization || '')) {
    console.log('token request: ignoring its Bearer authorization header');
    delete ctx.headers.authorization;
  }
  await next();
});

provider.listen(port, '127.0.0.1', () => {
  console.log(`oidc-provider listening on ${issuer}`);
});
