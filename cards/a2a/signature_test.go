package a2a_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/go-jose/go-jose/v4"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/a2a/a2atest"
	"github.com/agentcards/agentcards/cards/agenttest"
)

// The import's signature check (docs/a2a.md, Import: verified, unverified or invalid, and only
// invalid is refused), through a2a.Service.Import: which record, or which error, each signature
// gives. That the record and the error reach an HTTP client is web's (TestA2AImportSignatures).

var b64 = base64.RawURLEncoding.EncodeToString

// signingFixture is a fixture on SQLite with the server's default fetch guard, an Ed25519 key,
// k1, and the JWKS that holds it.
func signingFixture(t *testing.T) (*fixture, ed25519.PrivateKey, jose.JSONWebKeySet) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	keys := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: pub, KeyID: "k1", Algorithm: "EdDSA"}}}
	f := newFixture(t, "sqlite")
	f.guardAsDefault()
	return f, priv, keys
}

// withSignatures is the spec's 1.0 sample carrying sigs.
func withSignatures(t *testing.T, sigs ...map[string]any) map[string]any {
	t.Helper()
	c := a2atest.SampleV1(t)
	list := make([]any, len(sigs))
	for i, s := range sigs {
		list[i] = s
	}
	c["signatures"] = list
	return c
}

// signatureOf imports body as agentID, which must be accepted, and returns the card's signature
// record.
func (f *fixture) signatureOf(agentID string, body map[string]any) cards.SignatureCheck {
	f.t.Helper()
	body["agentId"] = agentID
	c := f.mustImport(body)
	if c.A2A == nil || c.A2A.Import == nil {
		f.t.Fatalf("%s: no import record: %s", agentID, jsonOf(f.t, c))
	}
	return c.A2A.Import.Signature
}

// TestA2AImportRefusesWeakAlgorithms: "none" and HMAC algorithms prove nothing about a card signed
// with a public key, so such a signature never verifies, even when the HMAC key is the public key
// itself (the algorithm-confusion attack); with no key to judge by, the card is "unverified".
func TestA2AImportRefusesWeakAlgorithms(t *testing.T) {
	f, _, keys := signingFixture(t)
	c := a2atest.SampleV1(t)
	pub := []byte(keys.Keys[0].Key.(ed25519.PublicKey))
	hs256 := func(key []byte) func([]byte) []byte {
		return func(input []byte) []byte { m := hmac.New(sha256.New, key); m.Write(input); return m.Sum(nil) }
	}
	for _, tc := range []struct {
		id  string
		sig map[string]any
	}{
		{"none", a2atest.JWS(t, c, map[string]any{"alg": "none", "kid": "k1"}, func([]byte) []byte { return nil })},
		{"hs256-public-key", a2atest.JWS(t, c, map[string]any{"alg": "HS256", "kid": "k1"}, hs256(pub))},
		{"hs256-jwk-x", a2atest.JWS(t, c, map[string]any{"alg": "HS256", "kid": "k1"}, hs256([]byte(b64(pub))))},
		{"hs512", a2atest.JWS(t, c, map[string]any{"alg": "HS512", "kid": "k1"}, hs256(pub))},
		{"unknown-alg", a2atest.JWS(t, c, map[string]any{"alg": "XX999", "kid": "k1"}, hs256(pub))},
		{"no-alg", a2atest.JWS(t, c, map[string]any{"kid": "k1"}, hs256(pub))},
	} {
		got := f.signatureOf(tc.id, map[string]any{"card": withSignatures(t, tc.sig), "keys": keys})
		if got.Status != cards.SignatureUnverified || got.Reason == "" || got.KeyID != "" {
			t.Errorf("%s: signature record %+v, want unverified", tc.id, got)
		}
	}
}

// TestA2AImportMalformedSignature: a signature that is not a JWS at all is invalid: the import is
// fault.BadSignature and stores nothing, or with allowInvalidSignature the card is recorded
// invalid.
func TestA2AImportMalformedSignature(t *testing.T) {
	f, priv, keys := signingFixture(t)
	good := a2atest.JWS(t, a2atest.SampleV1(t), map[string]any{"alg": "EdDSA", "kid": "k1", "typ": "JOSE"}, a2atest.EdDSA(priv))
	for _, tc := range []struct {
		id  string
		sig map[string]any
	}{
		{"protected-not-base64url", map[string]any{"protected": "!!not base64!!", "signature": good["signature"]}},
		{"protected-not-json", map[string]any{"protected": b64([]byte("alg=EdDSA")), "signature": good["signature"]}},
		{"protected-an-array", map[string]any{"protected": b64([]byte(`["EdDSA"]`)), "signature": good["signature"]}},
		{"signature-not-base64url", map[string]any{"protected": good["protected"], "signature": "***"}},
	} {
		_, err := f.importCard(map[string]any{"agentId": tc.id, "card": withSignatures(t, tc.sig), "keys": keys})
		wantKind(t, tc.id, err, fault.BadSignature)
		f.absent(tc.id)
		got := f.signatureOf(tc.id, map[string]any{"card": withSignatures(t, tc.sig), "allowInvalidSignature": true})
		if got.Status != cards.SignatureInvalid || got.Reason == "" {
			t.Errorf("%s: signature record %+v, want invalid", tc.id, got)
		}
	}
}

// TestA2AImportUnreadableRequestKey: a key in the request's keys that go-jose cannot read is
// fault.Malformed, whose message (what a client reads) is ours: the library's words, and its
// name, stay in the log. Nothing is stored.
func TestA2AImportUnreadableRequestKey(t *testing.T) {
	f, _, _ := signingFixture(t)
	for _, key := range []map[string]any{{"kty": "XYZ", "kid": "k1"}, {"kty": "OKP", "crv": "Ed25519", "kid": "k1"}} {
		_, err := f.importCard(map[string]any{"agentId": "unreadable", "card": a2atest.SampleV1(t), "keys": map[string]any{"keys": []any{key}}})
		wantKind(t, "key "+string(jsonOf(t, key)), err, fault.Malformed)
		if msg := fault.MessageOf(err); strings.Contains(msg, "jose") || strings.Contains(msg, "json:") {
			t.Errorf("%v: the message is a library's: %q", key, msg)
		}
	}
	f.absent("unreadable")
}

// TestA2AImportSeveralSignatures: any signature its key rejects makes the card invalid; otherwise
// one that verifies makes it verified, whatever the order; signatures without a key leave it
// unverified.
func TestA2AImportSeveralSignatures(t *testing.T) {
	f, priv, keys := signingFixture(t)
	_, stranger, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	c := a2atest.SampleV1(t)
	valid := a2atest.JWS(t, c, map[string]any{"alg": "EdDSA", "kid": "k1", "typ": "JOSE"}, a2atest.EdDSA(priv))
	keyless := a2atest.JWS(t, c, map[string]any{"alg": "EdDSA", "kid": "k9", "typ": "JOSE"}, a2atest.EdDSA(stranger))
	forged := a2atest.JWS(t, c, map[string]any{"alg": "EdDSA", "kid": "k1", "typ": "JOSE"}, a2atest.EdDSA(stranger))
	for _, tc := range []struct {
		id   string
		sigs []map[string]any
		// want is the record's status, kid and keySource; "" for a refused import
		// (fault.BadSignature).
		want [3]string
	}{
		{"keyless-then-valid", []map[string]any{keyless, valid}, [3]string{"verified", "k1", "request"}},
		{"valid-then-keyless", []map[string]any{valid, keyless}, [3]string{"verified", "k1", "request"}},
		{"valid-then-forged", []map[string]any{valid, forged}, [3]string{}},
		{"forged-then-valid", []map[string]any{forged, valid}, [3]string{}},
		{"all-forged", []map[string]any{forged, forged}, [3]string{}},
		{"all-keyless", []map[string]any{keyless, keyless}, [3]string{"unverified", "", ""}},
	} {
		body := map[string]any{"card": withSignatures(t, tc.sigs...), "keys": keys}
		if tc.want[0] == "" {
			body["agentId"] = tc.id
			_, err := f.importCard(body)
			wantKind(t, tc.id, err, fault.BadSignature)
			continue
		}
		got := f.signatureOf(tc.id, body)
		if [3]string{got.Status, got.KeyID, got.KeySource} != tc.want || (got.Status == "unverified") != (got.Reason != "") {
			t.Errorf("%s: signature record %+v, want %v", tc.id, got, tc.want)
		}
	}
}

// TestA2AImportRefusesJWSExtensions: a signature whose header uses a JWS extension never verifies,
// even with the right key: RFC 7515 §4.1.11 asks a verifier to reject a "crit" it does not
// understand, and we understand none. go-jose alone would let through an empty or null crit, and
// RFC 7797 unencoded payloads (b64: false) with or without crit; the card stays "unverified".
func TestA2AImportRefusesJWSExtensions(t *testing.T) {
	f, priv, keys := signingFixture(t)
	c := a2atest.SampleV1(t)
	edSigner := a2atest.EdDSA(priv)
	// unencoded signs as RFC 7797 asks: over the payload itself, not over its base64url.
	unencoded := func(input []byte) []byte {
		protected, enc, _ := bytes.Cut(input, []byte("."))
		payload, err := base64.RawURLEncoding.DecodeString(string(enc))
		if err != nil {
			t.Fatal(err)
		}
		return ed25519.Sign(priv, slices.Concat(protected, []byte("."), payload))
	}
	header := func(extra map[string]any) map[string]any {
		h := map[string]any{"alg": "EdDSA", "kid": "k1", "typ": "JOSE"}
		maps.Copy(h, extra)
		return h
	}
	for _, tc := range []struct {
		id  string
		sig map[string]any
	}{
		{"crit-exp", a2atest.JWS(t, c, header(map[string]any{"crit": []string{"exp"}, "exp": 1}), edSigner)},
		{"crit-empty", a2atest.JWS(t, c, header(map[string]any{"crit": []string{}}), edSigner)},
		{"crit-null", a2atest.JWS(t, c, header(map[string]any{"crit": nil}), edSigner)},
		{"crit-b64-true", a2atest.JWS(t, c, header(map[string]any{"crit": []string{"b64"}, "b64": true}), edSigner)},
		{"crit-b64-false", a2atest.JWS(t, c, header(map[string]any{"crit": []string{"b64"}, "b64": false}), unencoded)},
		{"b64-false", a2atest.JWS(t, c, header(map[string]any{"b64": false}), unencoded)},
	} {
		got := f.signatureOf(tc.id, map[string]any{"card": withSignatures(t, tc.sig), "keys": keys})
		if got.Status != cards.SignatureUnverified || got.Reason == "" || got.KeyID != "" {
			t.Errorf("%s: signature record %+v, want unverified", tc.id, got)
		}
	}
	got := f.signatureOf("control", map[string]any{"card": withSignatures(t, a2atest.JWS(t, c, header(nil), edSigner)), "keys": keys})
	if got.Status != cards.SignatureVerified {
		t.Fatalf("control: %+v", got)
	}
}

// TestA2AImportKeyMustFitTheAlgorithm: a key of the right kid but another curve or type (go-jose
// reads P-384 and RSA keys) does not check an ES256 signature; with no usable key the card is
// "unverified", not "invalid".
func TestA2AImportKeyMustFitTheAlgorithm(t *testing.T) {
	f, _, _ := signingFixture(t)
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	// Any 64 bytes: the key must not be used, so the signature is never looked at.
	sign := func([]byte) []byte { return make([]byte, 64) }
	for _, alg := range []string{"ES256", ""} {
		keys := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &p384.PublicKey, KeyID: "k1", Algorithm: alg}}}
		sig := a2atest.JWS(t, a2atest.SampleV1(t), map[string]any{"alg": "ES256", "kid": "k1", "typ": "JOSE"}, sign)
		got := f.signatureOf("p384-"+alg, map[string]any{"card": withSignatures(t, sig), "keys": keys})
		if got.Status != cards.SignatureUnverified || got.KeyID != "" {
			t.Errorf("P-384 key, alg %q: signature record %+v, want unverified", alg, got)
		}
	}
}

// TestA2AImportJKUFailures: a signature whose jku cannot give its key leaves the card
// "unverified" (docs/a2a.md: verified|unverified|invalid; only invalid is refused), whatever the
// cause, and a jku the outbound guard refuses is never fetched.
func TestA2AImportJKUFailures(t *testing.T) {
	f, priv, keys := signingFixture(t)
	otherKid := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{keys.Keys[0]}}
	otherKid.Keys[0].KeyID = "k2"
	jku := agenttest.New(t, func(w http.ResponseWriter, r *http.Request, got agenttest.Request) {
		switch got.Path {
		case "/not-jwks":
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte("<html>keys</html>"))
		case "/error":
			http.Error(w, "broken", http.StatusInternalServerError)
		case "/close":
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				_ = conn.Close()
			}
		default:
			http.NotFound(w, r)
		}
	})
	jku.ServeJSON("/jwks.json", http.StatusOK, jsonOf(t, keys))
	jku.ServeJSON("/other-kid.json", http.StatusOK, jsonOf(t, otherKid))
	signed := func(jkuURL string) map[string]any {
		h := map[string]any{"alg": "EdDSA", "kid": "k1", "typ": "JOSE", "jku": jkuURL}
		return withSignatures(t, a2atest.JWS(t, a2atest.SampleV1(t), h, a2atest.EdDSA(priv)))
	}
	unverified := func(id, jkuURL string) {
		t.Helper()
		if c := f.signatureOf(id, map[string]any{"card": signed(jkuURL)}); c.Status != cards.SignatureUnverified || c.Reason == "" || c.KeySource != "" || c.KeyID != "" {
			t.Errorf("%s: signature record %+v, want unverified with a reason and no key", id, c)
		}
	}

	// The server's guard without outbound.allow (signingFixture's) refuses loopback before any
	// dial.
	unverified("blocked", jku.URL+"/jwks.json")
	if fetched := jku.Count(func(r agenttest.Request) bool { return r.Path == "/jwks.json" }); fetched != 0 {
		t.Fatalf("the guard let a jku on loopback be fetched %d times", fetched)
	}

	f.allowLoopback()
	if c := f.signatureOf("control", map[string]any{"card": signed(jku.URL + "/jwks.json")}); c.Status != cards.SignatureVerified || c.KeySource != "jku" || c.KeyID != "k1" {
		t.Fatalf("control: %+v", c)
	}
	for _, tc := range []struct{ id, jku string }{
		{"unreachable", closedPortURL(t, "/jwks.json")},
		{"closed", jku.URL + "/close"},
		{"answers-500", jku.URL + "/error"},
		{"answers-404", jku.URL + "/missing"},
		{"not-a-jwks", jku.URL + "/not-jwks"},
		{"without-the-kid", jku.URL + "/other-kid.json"},
		{"not-http", "file:///etc/jwks.json"},
		{"relative", "/jwks.json"},
	} {
		unverified(tc.id, tc.jku)
	}
}
