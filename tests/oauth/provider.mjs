// A real OpenID provider for the OAuth tests: panva's oidc-provider (npm, installed by
// scripts/test-deps under target/oidc), on loopback. Not a fake: tokens, keys, discovery and
// introspection are the library's own.
//
//   OIDC_MODULES=target/oidc/node_modules node provider.mjs PORT RESOURCE KEYS_OUT [TTL_SECONDS]
//
// Clients (client_credentials, client_secret_basic; the secret is the id + "-secret"):
//   reader   scopes it may ask for: "read-only memory"        (JWT access tokens)
//   admin    "read-only memory admin mcp"                      (JWT)
//   eng-bot  no scope; its tokens carry a `groups: ["eng"]` claim (JWT)
//   opaque   "read-only memory", opaque tokens (for introspection)
//   gateway  no grant: the gateway's credentials at the introspection endpoint
//   native-cli  a public native client of the authorization-code grant (loopback redirect) and
//               of the device grant
// Dynamic registration (RFC 7591) is open, and the authorization-code grant signs anyone in
// (oidc-provider's development login and consent pages): the subject is the login typed.
// IDP_SPA_REDIRECT=URL adds `spa`, a public client (no secret, PKCE) of the authorization-code
// grant redirecting to URL, as a single-page web app is registered: the provider's own
// client-based CORS then lets a page at URL's origin redeem its code.
// IDP_CIMD=1 turns on Client ID Metadata Documents (an HTTPS URL as a client_id, the document
// fetched from it), trusting the test authority in NODE_EXTRA_CA_CERTS and, as tests serve
// the documents on loopback, fetching them without the library's guard against loopback
// addresses (in production that guard stays).
// IDP_NO_METADATA=1 answers 404 for every /.well-known/ document: an authorization server
// that publishes no metadata.
// Prints {"issuer": ...} on stdout once listening; writes its private signing key (a JWK)
// to KEYS_OUT, so a test can sign tokens with claims the provider would never issue.
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

// The packages live under target/, not beside this file: resolve them there.
const from = createRequire(`${process.env.OIDC_MODULES}/`);
const load = (name) => import(pathToFileURL(from.resolve(name)).href);
const { default: Provider } = await load('oidc-provider');
const { generateKeyPair, exportJWK } = await load('jose');

const [port, resource, keysOut, ttlArg] = process.argv.slice(2);
const ttl = Number(ttlArg || 300);
const issuer = `http://127.0.0.1:${port}`;
const { privateKey } = await generateKeyPair('RS256', { extractable: true });
const jwk = { ...(await exportJWK(privateKey)), kid: 'test-key-1', alg: 'RS256', use: 'sig' };
writeFileSync(keysOut, JSON.stringify(jwk), { mode: 0o600 });

const client = (id, scope, extra = {}) => ({
  client_id: id,
  client_secret: `${id}-secret`,
  grant_types: ['client_credentials'],
  response_types: [],
  redirect_uris: [],
  token_endpoint_auth_method: 'client_secret_basic',
  ...(scope ? { scope } : {}),
  ...extra,
});

const provider = new Provider(issuer, {
  clients: [
    client('reader', 'read-only memory'),
    client('admin', 'read-only memory admin mcp'),
    client('eng-bot', ''),
    client('opaque', 'read-only memory'),
    client('gateway', ''),
    ...(process.env.IDP_SPA_REDIRECT
      ? [{
          client_id: 'spa',
          grant_types: ['authorization_code'],
          response_types: ['code'],
          redirect_uris: [process.env.IDP_SPA_REDIRECT],
          token_endpoint_auth_method: 'none',
        }]
      : []),
    // A client registered by hand, as one is where the server publishes no metadata: a native
    // app, so its loopback redirect may come on any port (RFC 8252 section 7.3).
    {
      client_id: 'native-cli',
      application_type: 'native',
      grant_types: ['authorization_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:device_code'],
      response_types: ['code'],
      redirect_uris: ['http://127.0.0.1/callback'],
      token_endpoint_auth_method: 'none',
    },
  ],
  jwks: { keys: [jwk] },
  scopes: ['read-only', 'memory', 'admin', 'mcp', 'offline_access'],
  features: {
    // The login and consent pages tests/oauth/sdk_client.py signs in through (any login).
    devInteractions: { enabled: true },
    // IDP_REGISTRATION=closed: registration needs an initial access token nobody has.
    registration: { enabled: true, initialAccessToken: process.env.IDP_REGISTRATION === 'closed' },
    clientCredentials: { enabled: true },
    deviceFlow: { enabled: true },
    introspection: { enabled: true },
    ...(process.env.IDP_CIMD
      ? { clientIdMetadataDocument: { enabled: true, ack: 'draft-02' } }
      : {}),
    resourceIndicators: {
      enabled: true,
      defaultResource: () => resource,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, indicator, c) => ({
        scope: 'read-only memory admin mcp',
        audience: indicator,
        accessTokenTTL: ttl,
        accessTokenFormat: c.clientId === 'opaque' ? 'opaque' : 'jwt',
      }),
    },
  },
  ...(process.env.IDP_CIMD ? { fetch: (url, options) => fetch(url, { ...options, dispatcher: undefined }) } : {}),
  extraTokenClaims: async (ctx, token) => (token.clientId === 'eng-bot' ? { groups: ['eng'] } : undefined),
});
provider.proxy = false;
// IDP_NO_METADATA=1: an authorization server that publishes no metadata (its endpoints are
// given by hand).
if (process.env.IDP_NO_METADATA) {
  provider.use(async (ctx, next) => {
    if (ctx.path.startsWith('/.well-known/')) {
      ctx.status = 404;
      ctx.body = 'no metadata here';
      return;
    }
    await next();
  });
}
provider.listen(Number(port), '127.0.0.1', () => {
  process.stdout.write(JSON.stringify({ issuer }) + '\n');
});
