package a2atest

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"maps"
	"testing"

	"github.com/gowebpki/jcs"
)

// JWS is one A2A 1.0 signature (spec 1.0 §8.4) over card without its signatures, written
// independently of the product's signer: the protected header h, and sign's signature of
// base64url(h) "." base64url(JCS(card)). Any header and any signing function may be given, so
// that a test can write the signatures a verifier must refuse.
func JWS(t testing.TB, card, h map[string]any, sign func(input []byte) []byte) map[string]any {
	t.Helper()
	c := maps.Clone(card)
	delete(c, "signatures")
	payload, err := jcs.Transform(marshal(t, c))
	if err != nil {
		t.Fatal(err)
	}
	protected := base64.RawURLEncoding.EncodeToString(marshal(t, h))
	sig := sign([]byte(protected + "." + base64.RawURLEncoding.EncodeToString(payload)))
	return map[string]any{"protected": protected, "signature": base64.RawURLEncoding.EncodeToString(sig)}
}

// EdDSA signs a JWS signing input with priv, for JWS.
func EdDSA(priv ed25519.PrivateKey) func(input []byte) []byte {
	return func(input []byte) []byte { return ed25519.Sign(priv, input) }
}

// SignEd25519 signs card (a JSON object) in place with priv, as its one A2A 1.0 signature,
// protected header {"alg": "EdDSA", "kid": kid, "typ": "JOSE"} and "jku": jku unless jku is "";
// it returns card.
func SignEd25519(t testing.TB, priv ed25519.PrivateKey, kid, jku string, card map[string]any) map[string]any {
	t.Helper()
	h := map[string]any{"alg": "EdDSA", "kid": kid, "typ": "JOSE"}
	if jku != "" {
		h["jku"] = jku
	}
	delete(card, "signatures")
	card["signatures"] = []any{JWS(t, card, h, EdDSA(priv))}
	return card
}

// marshal is v as JSON.
func marshal(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
