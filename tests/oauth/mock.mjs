// A second, independent token issuer for the OAuth refusal tests: `oauth2-mock-server` from npm
// (installed under target/oauth-mock by scripts/test-deps), so that the gateway's token checks
// are proven against tokens minted by code nobody here wrote, not only against our own forgeries.
//
//   MOCK_MODULES=target/oauth-mock/node_modules node mock.mjs AUDIENCE
//
// Starts two issuers on loopback: `trusted` (the one the test's gateway is told to trust) and
// `stranger` (one it is not). The trusted issuer's token endpoint puts RFC 8707's `resource` in
// the token's `aud`, as a real authorization server for MCP does. Prints one JSON line,
// {issuer, stranger, tokens: {name: token}}, then serves until killed.
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

const from = createRequire(`${process.env.MOCK_MODULES}/`);
const { OAuth2Server } = await import(pathToFileURL(from.resolve('oauth2-mock-server')).href);

const [audience] = process.argv.slice(2);

const trusted = new OAuth2Server();
const stranger = new OAuth2Server();
const trustedKid = (await trusted.issuer.keys.generate('RS256')).kid;
await stranger.issuer.keys.generate('RS256');
for (const server of [trusted, stranger]) {
  await server.start(0, '127.0.0.1');
  // It would name itself `localhost`, which may resolve to ::1, where it does not listen.
  server.issuer.url = `http://127.0.0.1:${server.address().port}`;
}
trusted.service.on('beforeTokenSigning', (token, req) => {
  if (req.body && req.body.resource) token.payload.aud = req.body.resource;
});

const claims = (more) => (header, payload) => {
  Object.assign(payload, { sub: 'mallory', aud: audience, scope: 'read-only memory' }, more(header, payload));
  for (const [k, v] of Object.entries(payload)) if (v === undefined) delete payload[k];
};
const now = Math.floor(Date.now() / 1000);
const build = (server, more, expiresIn = 300) =>
  server.issuer.buildToken({ scopesOrTransform: claims(more), expiresIn });

const tokens = {
  good: await build(trusted, () => ({})),
  expired: await build(trusted, () => ({ iat: now - 7200, nbf: now - 7200 }), -3600),
  not_yet_valid: await build(trusted, () => ({ nbf: now + 3600 })),
  wrong_audience: await build(trusted, () => ({ aud: 'http://127.0.0.1:1/another-resource' })),
  no_subject: await build(trusted, () => ({ sub: undefined })),
  // The stranger's own token: an issuer the gateway was never told of.
  stranger_issuer: await build(stranger, () => ({})),
  // The stranger claims to be the trusted issuer: under its own key id, then under the trusted one's.
  unknown_key: await build(stranger, () => ({ iss: trusted.issuer.url })),
  impostor_key: await build(stranger, (header) => {
    header.kid = trustedKid;
    return { iss: trusted.issuer.url };
  }),
};

process.stdout.write(`${JSON.stringify({ issuer: trusted.issuer.url, stranger: stranger.issuer.url, tokens })}\n`);
