// Checks, in the browser, the signature this service puts on the A2A cards it serves: a JWS
// with a detached payload over the card's RFC 8785 (JCS) canonical form without "signatures"
// (A2A 1.0 §8.4), with a key of the service's JWKS (/.well-known/jwks.json).
import { call, fromBase64URL, toBase64URL } from './api.js';

// canonical is RFC 8785 for what JSON.parse returns: members sorted by UTF-16 code units (what
// sort() compares), numbers and strings as ECMAScript serialises them, which JCS adopts.
export function canonical(v) {
  if (v === null || typeof v !== 'object') { return JSON.stringify(v); }
  if (Array.isArray(v)) { return `[${v.map(canonical).join(',')}]`; }
  return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`).join(',')}}`;
}

const ALGORITHMS = {
  ES256: { importAs: { name: 'ECDSA', namedCurve: 'P-256' }, verifyAs: { name: 'ECDSA', hash: 'SHA-256' } },
  EdDSA: { importAs: { name: 'Ed25519' }, verifyAs: { name: 'Ed25519' } },
};

let jwks = null;

// verifyCard resolves to {state: 'verified' | 'invalid' | 'unchecked' | 'unsigned', text}.
export async function verifyCard(card) {
  const sigs = Array.isArray(card.signatures) ? card.signatures : [];
  if (sigs.length === 0) { return { state: 'unsigned', text: 'The card carries no signature.' }; }
  if (!globalThis.crypto || !crypto.subtle) {
    return { state: 'unchecked', text: 'Signed, but not checked here: this browser offers no WebCrypto on a page that is not served over HTTPS.' };
  }
  try {
    const keys = async (fresh) => {
      if (!jwks || fresh) { jwks = (await call('GET', '/.well-known/jwks.json')).data; }
      return jwks.keys || [];
    };
    const { signatures, ...rest } = card;
    const payload = toBase64URL(new TextEncoder().encode(canonical(rest)));
    for (const sig of sigs) {
      const header = JSON.parse(new TextDecoder().decode(fromBase64URL(sig.protected)));
      const alg = ALGORITHMS[header.alg];
      // A key not known yet may be a new one (keys rotate): the set is read again once.
      const jwk = (await keys(false)).find((k) => k.kid === header.kid) || (await keys(true)).find((k) => k.kid === header.kid);
      if (!alg || !jwk) { continue; }
      const key = await crypto.subtle.importKey('jwk', jwk, alg.importAs, false, ['verify']);
      const ok = await crypto.subtle.verify(alg.verifyAs, key, fromBase64URL(sig.signature),
        new TextEncoder().encode(`${sig.protected}.${payload}`));
      return ok
        ? { state: 'verified', text: `Signature verified in this browser with the service's key ${header.kid} (${header.alg}).` }
        : { state: 'invalid', text: `The signature does not verify with the service's key ${header.kid}: the card is not what the service signed.` };
    }
    return { state: 'unchecked', text: 'Signed with a key this service does not publish, or an algorithm this page does not check.' };
  } catch (err) {
    return { state: 'unchecked', text: `The signature could not be checked: ${err.message}` };
  }
}
