// Checks an A2A Agent Card's signatures with @a2a-js/sdk's verifier, as a TypeScript client of
// the SDK would: node verify-card.mjs CARD.json JWKS.json exits 0 when a signature verifies with a
// key of the set (found by its kid), 1 when none does. The SDK is installed beside this file
// (npm install @a2a-js/sdk@1.3.0, which brings jose).
import { readFileSync } from 'node:fs';
import { verifyAgentCardSignature } from '@a2a-js/sdk';
import * as jose from 'jose';

const card = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const jwks = JSON.parse(readFileSync(process.argv[3], 'utf8'));
console.debug = () => {}; // the verifier logs each signature it cannot check
const verify = verifyAgentCardSignature(async (kid) => {
  const key = jwks.keys.find((k) => k.kid === kid);
  if (!key) {
    throw new Error(`no key ${kid}`);
  }
  return jose.importJWK(key, key.alg || (key.crv === 'Ed25519' ? 'EdDSA' : 'ES256'));
});
try {
  await verify(card);
  console.log('verified');
} catch (err) {
  console.error(String(err));
  process.exit(1);
}
