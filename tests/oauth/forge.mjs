// Tokens an attacker or a broken client would present, for the OAuth refusal tests. Signed
// with the provider's own key (tests/oauth/provider.mjs writes it) where the attack needs a
// valid signature over bad claims, with a fresh key where it needs an unknown one.
//
//   OIDC_MODULES=target/oidc/node_modules node forge.mjs KEY_FILE ISSUER AUDIENCE
//
// Prints one JSON object: {name: token}.
import { readFileSync } from 'node:fs';
import { createHmac, createPublicKey } from 'node:crypto';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

const from = createRequire(`${process.env.OIDC_MODULES}/`);
const { SignJWT, importJWK, generateKeyPair } = await import(pathToFileURL(from.resolve('jose')).href);

const [keyFile, issuer, audience] = process.argv.slice(2);
const jwk = JSON.parse(readFileSync(keyFile, 'utf8'));
const key = await importJWK(jwk, 'RS256');
const now = Math.floor(Date.now() / 1000);
const b64 = (o) => Buffer.from(typeof o === 'string' ? o : JSON.stringify(o)).toString('base64url');

const sign = async (claims, { k = key, kid = jwk.kid, alg = 'RS256' } = {}) =>
  new SignJWT({ scope: 'read-only memory', ...claims })
    .setProtectedHeader({ alg, kid, typ: 'at+jwt' })
    .sign(k);
const base = { iss: issuer, aud: audience, sub: 'mallory', iat: now, exp: now + 300 };

const stranger = (await generateKeyPair('RS256')).privateKey;
const publicPem = createPublicKey({ key: jwk, format: 'jwk' }).export({ type: 'spki', format: 'pem' });
const hsInput = `${b64({ alg: 'HS256', kid: jwk.kid, typ: 'at+jwt' })}.${b64({ ...base, scope: 'read-only memory admin' })}`;

const tokens = {
  good: await sign(base),
  expired: await sign({ ...base, iat: now - 7200, exp: now - 3600 }),
  not_yet_valid: await sign({ ...base, nbf: now + 3600 }),
  wrong_audience: await sign({ ...base, aud: 'http://127.0.0.1:1/another-resource' }),
  wrong_issuer: await sign({ ...base, iss: 'http://127.0.0.1:1' }),
  no_subject: await sign({ ...base, sub: undefined }),
  unknown_key: await sign(base, { k: stranger, kid: 'a-key-nobody-published' }),
  impostor_key: await sign(base, { k: stranger }),
  alg_none: `${b64({ alg: 'none', typ: 'at+jwt' })}.${b64(base)}.`,
  hs256_with_public_key: `${hsInput}.${createHmac('sha256', publicPem).update(hsInput).digest('base64url')}`,
};
process.stdout.write(JSON.stringify(tokens) + '\n');
