// Signing in to the console with the catalog's OpenID provider: the authorization code flow with PKCE (RFC 7636)
// for a public client, as a single-page application does it. The access token lives in this tab's sessionStorage
// only and is sent as a bearer token with every API call, so the catalog's log names the person.

const TOKEN = "lakeledger.token";
const PENDING = "lakeledger.signin";

const b64url = (bytes) => btoa(String.fromCharCode(...new Uint8Array(bytes)))
  .replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");

function randomText(n = 48) {
  return b64url(crypto.getRandomValues(new Uint8Array(n)));
}

async function discovery(issuer) {
  const r = await fetch(`${issuer.replace(/\/$/, "")}/.well-known/openid-configuration`);
  if (!r.ok) throw new Error(`The OpenID provider's discovery document could not be read (${r.status})`);
  return r.json();
}

const redirectUri = () => `${location.origin}/ui`;

export function token() {
  const saved = JSON.parse(sessionStorage.getItem(TOKEN) || "null");
  if (!saved || saved.expiresAt < Date.now()) return null;
  return saved.accessToken;
}

export function signOut() {
  sessionStorage.removeItem(TOKEN);
}

export async function signIn(config) {
  const provider = await discovery(config["openid-provider-uri"]);
  const verifier = randomText();
  const challenge = b64url(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)));
  const state = randomText(16);
  sessionStorage.setItem(PENDING, JSON.stringify({ verifier, state, back: location.hash }));
  const params = new URLSearchParams({
    response_type: "code", client_id: config["client-id"], redirect_uri: redirectUri(), scope: config.scope,
    state, code_challenge: challenge, code_challenge_method: "S256",
  });
  if (config.resource) params.set("resource", config.resource);
  location.assign(`${provider.authorization_endpoint}?${params}`);
}

// Back from the provider with ?code=...&state=...: the code is exchanged for a token, and the address cleaned.
export async function finishSignIn(config) {
  const query = new URLSearchParams(location.search);
  if (!query.has("code") && !query.has("error")) return false;
  const pending = JSON.parse(sessionStorage.getItem(PENDING) || "null");
  sessionStorage.removeItem(PENDING);
  history.replaceState(null, "", `/ui${pending ? pending.back : ""}`);
  if (query.has("error")) throw new Error(`Sign-in refused: ${query.get("error_description") || query.get("error")}`);
  if (!pending || pending.state !== query.get("state")) throw new Error("Sign-in answer does not match this tab's request");
  const provider = await discovery(config["openid-provider-uri"]);
  const body = new URLSearchParams({
    grant_type: "authorization_code", code: query.get("code"), redirect_uri: redirectUri(),
    client_id: config["client-id"], code_verifier: pending.verifier,
  });
  if (config.resource) body.set("resource", config.resource);
  const r = await fetch(provider.token_endpoint, { method: "POST", body });
  const answer = await r.json();
  if (!r.ok) throw new Error(`Sign-in failed: ${answer.error_description || answer.error || r.status}`);
  sessionStorage.setItem(TOKEN, JSON.stringify({
    accessToken: answer.access_token, expiresAt: Date.now() + (answer.expires_in || 300) * 1000,
  }));
  return true;
}
