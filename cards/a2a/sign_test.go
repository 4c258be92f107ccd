package a2a_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"maps"
	"math/big"
	"reflect"
	"testing"

	"github.com/agentcards/agentcards/authz/token"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/a2a"
	"github.com/agentcards/agentcards/cards/a2a/a2atest"
)

// How the service signs the A2A cards it serves (docs/a2a.md, Signatures), through a2a.SignCard:
// the header, the payload, and that the signature verifies as the page tells a client to verify
// it. That every served card carries one that verifies with /.well-known/jwks.json is web's
// (TestA2ACardsAreSigned and the console's checks).

// jcsCard is a card whose members are out of order and written in forms that RFC 8785 (JCS)
// rewrites; jcsCanonical is its canonical form, written by hand from RFC 8785: members sorted by
// UTF-16 code units (so U+1F600, a surrogate pair, before U+FB01), numbers as ECMAScript writes
// them, strings escaping only '"', '\' and control characters, and nothing else ('<', '/', and
// non-ASCII as they are).
const (
	jcsCard = `{"version": "1.0.0", "name": "Caf\u00e9 \ud83d\ude00", "z": {"b": 2, "a": 1},
		"n": [1e2, 1.50, -0, 0.000001, 1e21, 1e-7], "esc": "tab\there \"q\" \u000f / <&>",
		"\ufb01": 4, "\u20ac": 1, "\ud83d\ude00": 2, "\u00e9": 3}`
	jcsCanonical = `{"esc":"tab\there \"q\" \u000f / <&>","n":[100,1.5,0,0.000001,1e+21,1e-7],"name":"Café 😀",` +
		`"version":"1.0.0","z":{"a":1,"b":2},"é":3,"€":1,"😀":2,"ﬁ":4}`
)

// recordingSigner is an a2a.CardSigner that keeps what it was asked to sign, and answers a fixed
// protected header and signature, or err.
type recordingSigner struct {
	header  map[string]any
	payload []byte
	calls   int
	err     error
}

func (s *recordingSigner) SignDetached(header map[string]any, payload []byte) (string, string, error) {
	s.header, s.payload, s.calls = maps.Clone(header), payload, s.calls+1
	return "cHJvdGVjdGVk", "c2lnbmF0dXJl", s.err
}

// TestSignCardCanonicalPayload: SignCard asks its signer for a JWS with the header {"typ":
// "JOSE"} (the signer adds alg and kid) over the JCS form of the card, a JSON document or any
// value that encodes to a JSON object, and returns the card with its members as they were and
// that one signature added.
func TestSignCardCanonicalPayload(t *testing.T) {
	type skill struct {
		Tags []string `json:"tags"`
		ID   string   `json:"id"`
	}
	type card struct {
		Version string  `json:"version"`
		Skills  []skill `json:"skills"`
		Name    string  `json:"name"`
		Icon    string  `json:"iconUrl,omitempty"`
	}
	for _, tc := range []struct {
		name      string
		card      any
		canonical string
	}{
		{"a JSON document", json.RawMessage(jcsCard), jcsCanonical},
		{"a struct", card{Version: "1.0.0", Skills: []skill{{Tags: []string{"b", "a"}, ID: "echo"}}, Name: "Echo"},
			`{"name":"Echo","skills":[{"id":"echo","tags":["b","a"]}],"version":"1.0.0"}`},
	} {
		s := &recordingSigner{}
		signed, err := a2a.SignCard(s, tc.card)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if s.calls != 1 || !reflect.DeepEqual(s.header, map[string]any{"typ": "JOSE"}) || string(s.payload) != tc.canonical {
			t.Errorf("%s: signed %d times, header %v, payload\n%s\nwant\n%s", tc.name, s.calls, s.header, s.payload, tc.canonical)
		}
		got := a2atest.DecodeCard(t, signed)
		want := a2atest.DecodeCard(t, jsonOf(t, tc.card))
		want["signatures"] = []any{map[string]any{"protected": "cHJvdGVjdGVk", "signature": "c2lnbmF0dXJl"}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: signed card\n%s\nwant\n%s", tc.name, signed, jsonOf(t, want))
		}
	}
}

// TestSignCardRefuses: a value that is not a JSON object cannot be a card, and a signer that
// fails fails the signing; neither gives a card.
func TestSignCardRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		card any
	}{
		{"null", nil},
		{"a string", "card"},
		{"an array", []any{map[string]any{"name": "x"}}},
		{"not JSON", json.RawMessage(`{"name": `)},
		{"not encodable", map[string]any{"name": make(chan int)}},
	} {
		s := &recordingSigner{}
		if signed, err := a2a.SignCard(s, tc.card); err == nil || signed != nil || s.calls != 0 {
			t.Errorf("%s: signed %s (%v), signer called %d times", tc.name, signed, err, s.calls)
		}
	}
	failing := errors.New("the key is gone")
	s := &recordingSigner{err: failing}
	if signed, err := a2a.SignCard(s, map[string]any{"name": "x"}); !errors.Is(err, failing) || signed != nil {
		t.Errorf("failing signer: %s, %v", signed, err)
	}
}

// serviceKeys is the service's key set holding signers, oldest first.
func serviceKeys(t *testing.T, signers ...crypto.Signer) *token.ServiceKeys {
	t.Helper()
	var ks []token.ServiceKey
	for _, s := range signers {
		k, err := token.NewServiceKey(s)
		if err != nil {
			t.Fatal(err)
		}
		ks = append(ks, k)
	}
	keys, err := token.NewServiceKeys(ks...)
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// verifies tells whether sig (base64url) is pub's signature of input, checked with the standard
// library as JWS defines ES256 (SHA-256, R || S) and EdDSA.
func verifies(pub crypto.PublicKey, input []byte, sig string) bool {
	raw, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil {
		return false
	}
	switch k := pub.(type) {
	case ed25519.PublicKey:
		return ed25519.Verify(k, input, raw)
	case *ecdsa.PublicKey:
		sum := sha256.Sum256(input)
		return len(raw) == 64 && ecdsa.Verify(k, sum[:], new(big.Int).SetBytes(raw[:32]), new(big.Int).SetBytes(raw[32:]))
	}
	return false
}

// generate makes a P-256 or an Ed25519 key.
func generate(t *testing.T, alg string) crypto.Signer {
	t.Helper()
	if alg == "ES256" {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// signatureOfCard is the one signature of a signed card: its protected header, decoded, and the
// base64url protected header and signature.
func signatureOfCard(t *testing.T, signed []byte) (header map[string]any, protected, sig string) {
	t.Helper()
	var card struct{ Signatures []a2a.AgentCardSignature }
	if err := json.Unmarshal(signed, &card); err != nil || len(card.Signatures) != 1 {
		t.Fatalf("signatures of %s: %v", signed, err)
	}
	s := card.Signatures[0]
	hb, err := base64.RawURLEncoding.DecodeString(s.Protected)
	if err != nil || json.Unmarshal(hb, &header) != nil || s.Header != nil {
		t.Fatalf("signature %+v: %v", s, err)
	}
	return header, s.Protected, s.Signature
}

// TestSignCardWithServiceKeys: signed with the service's keys, ES256 or EdDSA, a card carries one
// signature by the newest key, with the protected header {"alg", "kid", "typ": "JOSE"}, kid naming
// that key in the JWKS. As docs/a2a.md tells a client to verify it, over base64url(protected) "."
// base64url(JCS(card)), it verifies with that key, and not with the older key, another key, or
// over a changed card.
func TestSignCardWithServiceKeys(t *testing.T) {
	for _, tc := range []struct{ alg, older string }{{"ES256", "EdDSA"}, {"EdDSA", "ES256"}, {"EdDSA", "EdDSA"}} {
		older, newest := generate(t, tc.older), generate(t, tc.alg)
		keys := serviceKeys(t, older, newest)
		signed, err := a2a.SignCard(keys, json.RawMessage(jcsCard))
		if err != nil {
			t.Fatalf("%s: %v", tc.alg, err)
		}
		header, protected, sig := signatureOfCard(t, signed)
		jwks := keys.JWKS() // newest first
		if want := map[string]any{"alg": tc.alg, "kid": jwks.Keys[0].KeyID, "typ": "JOSE"}; !reflect.DeepEqual(header, want) ||
			jwks.Keys[0].KeyID == jwks.Keys[1].KeyID {
			t.Errorf("%s: protected header %v, want %v", tc.alg, header, want)
		}
		input := func(canonical string) []byte {
			return []byte(protected + "." + base64.RawURLEncoding.EncodeToString([]byte(canonical)))
		}
		if !verifies(newest.Public(), input(jcsCanonical), sig) {
			t.Errorf("%s: the signature does not verify with the key that made it", tc.alg)
		}
		changed := jcsCanonical[:len(jcsCanonical)-2] + `5}`
		for name, ok := range map[string]bool{
			"the older key":  verifies(older.Public(), input(jcsCanonical), sig),
			"another key":    verifies(generate(t, tc.alg).Public(), input(jcsCanonical), sig),
			"a changed card": verifies(newest.Public(), input(changed), sig),
		} {
			if ok {
				t.Errorf("%s: the signature verifies with %s", tc.alg, name)
			}
		}
	}
}

// TestSignCardVerifiesOnImport: a card the service signed, imported with its JWKS, has its
// signature verified by the key it names; changed after signing, the same signature is invalid.
func TestSignCardVerifiesOnImport(t *testing.T) {
	f := newFixture(t, "sqlite")
	for _, alg := range []string{"ES256", "EdDSA"} {
		keys := serviceKeys(t, generate(t, alg))
		kid := keys.JWKS().Keys[0].KeyID
		card := a2atest.SampleV1(t)
		delete(card, "signatures")
		signed, err := a2a.SignCard(keys, card)
		if err != nil {
			t.Fatal(err)
		}
		jwks := json.RawMessage(jsonOf(t, keys.JWKS()))
		got := f.signatureOf("signed-"+alg, map[string]any{"card": json.RawMessage(signed), "keys": jwks})
		if got != (cards.SignatureCheck{Status: "verified", KeyID: kid, KeySource: "request"}) {
			t.Errorf("%s: signature record %+v, want verified by %s", alg, got, kid)
		}
		changed := a2atest.DecodeCard(t, signed)
		changed["version"] = "1.2.1"
		got = f.signatureOf("changed-"+alg, map[string]any{"card": changed, "keys": jwks, "allowInvalidSignature": true})
		if got.Status != "invalid" || got.KeyID != kid {
			t.Errorf("%s, changed: signature record %+v, want invalid by %s", alg, got, kid)
		}
	}
}
