package web_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/go-jose/go-jose/v4"
	"github.com/gowebpki/jcs"

	"github.com/agentcards/agentcards/storage/storagetest"
)

var b64 = base64.RawURLEncoding.EncodeToString

// jwsFor returns one A2A 1.0 signature (§8.4) over card without its signatures: protected header
// h, and sign's signature of base64url(h) + "." + base64url(JCS(card)).
func jwsFor(t *testing.T, card map[string]any, h map[string]any, sign func(input []byte) []byte) map[string]any {
	t.Helper()
	c := maps.Clone(card)
	delete(c, "signatures")
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := jcs.Transform(b)
	if err != nil {
		t.Fatal(err)
	}
	hb, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	protected := b64(hb)
	return map[string]any{"protected": protected, "signature": b64(sign([]byte(protected + "." + b64(payload))))}
}

func edSigner(priv ed25519.PrivateKey) func([]byte) []byte {
	return func(input []byte) []byte { return ed25519.Sign(priv, input) }
}

// withSignatures is sampleV1 carrying sigs.
func withSignatures(t *testing.T, sigs ...map[string]any) map[string]any {
	c := sampleV1(t)
	list := make([]any, len(sigs))
	for i, s := range sigs {
		list[i] = s
	}
	c["signatures"] = list
	return c
}

// signatureCheck is the a2a.import.signature record of an imported card.
type signatureCheck struct {
	Status, Reason, Kid, KeySource string
}

func importedCheck(t *testing.T, r response) signatureCheck {
	t.Helper()
	var rest struct {
		A2A struct {
			Import struct{ Signature signatureCheck }
		}
	}
	r.json(t, &rest)
	return rest.A2A.Import.Signature
}

// importSignatureEnv is a server with tenant acme, an Ed25519 key k1 and the JWKS holding it.
func importSignatureEnv(t *testing.T) (*env, func(id string, body map[string]any) response, ed25519.PrivateKey, jose.JSONWebKeySet) {
	e := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	e.mkTenant("acme", "alice")
	alice := e.token("alice", "acme", false)
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	keys := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: pub, KeyID: "k1", Algorithm: "EdDSA"}}}
	imp := func(id string, body map[string]any) response {
		body["agentId"] = id
		return e.do("POST", "/v1/tenants/acme/cards/import", alice, body)
	}
	return e, imp, priv, keys
}

// TestA2AImportJKUFailures: a signature whose jku cannot give its key leaves the card
// "unverified" (docs/a2a.md: verified|unverified|invalid; only invalid is refused), whatever the cause,
// and a jku the outbound guard refuses is never fetched.
func TestA2AImportJKUFailures(t *testing.T) {
	e, imp, priv, keys := importSignatureEnv(t)
	otherKid := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{keys.Keys[0]}}
	otherKid.Keys[0].KeyID = "k2"
	var mu sync.Mutex
	hits := map[string]int{}
	jku := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits[r.URL.Path]++
		mu.Unlock()
		switch r.URL.Path {
		case "/jwks.json":
			_ = json.NewEncoder(w).Encode(keys)
		case "/other-kid.json":
			_ = json.NewEncoder(w).Encode(otherKid)
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
	}))
	defer jku.Close()
	signed := func(jkuURL string) map[string]any {
		c := sampleV1(t)
		return withSignatures(t, jwsFor(t, c, map[string]any{"alg": "EdDSA", "kid": "k1", "typ": "JOSE", "jku": jkuURL}, edSigner(priv)))
	}
	unverified := func(name string, r response) {
		t.Helper()
		expect(t, r, http.StatusCreated)
		if c := importedCheck(t, r); c.Status != "unverified" || c.Reason == "" || c.KeySource != "" || c.Kid != "" {
			t.Errorf("%s: signature record %+v, want unverified with a reason and no key", name, c)
		}
	}

	// The test env's guard is the default one: loopback is refused before any dial.
	unverified("blocked", imp("blocked", map[string]any{"card": signed(jku.URL + "/jwks.json")}))
	mu.Lock()
	fetched := hits["/jwks.json"]
	mu.Unlock()
	if fetched != 0 {
		t.Fatalf("the guard let a jku on loopback be fetched %d times", fetched)
	}

	e.allowLoopback()
	r := imp("control", map[string]any{"card": signed(jku.URL + "/jwks.json")})
	expect(t, r, http.StatusCreated)
	if c := importedCheck(t, r); c.Status != "verified" || c.KeySource != "jku" || c.Kid != "k1" {
		t.Fatalf("control: %+v", c)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := "http://" + ln.Addr().String() + "/jwks.json"
	_ = ln.Close()
	for _, tc := range []struct{ id, jku string }{
		{"unreachable", closedPort},
		{"closed", jku.URL + "/close"},
		{"answers-500", jku.URL + "/error"},
		{"answers-404", jku.URL + "/missing"},
		{"not-a-jwks", jku.URL + "/not-jwks"},
		{"without-the-kid", jku.URL + "/other-kid.json"},
		{"not-http", "file:///etc/jwks.json"},
		{"relative", "/jwks.json"},
	} {
		unverified(tc.id, imp(tc.id, map[string]any{"card": signed(tc.jku)}))
	}
}

// TestA2AImportRefusesWeakAlgorithms: "none" and HMAC algorithms prove nothing about a card signed
// with a public key, so such a signature never verifies, even when the HMAC key is the public key
// itself (the algorithm-confusion attack); with no key to judge by, the card is "unverified".
func TestA2AImportRefusesWeakAlgorithms(t *testing.T) {
	_, imp, _, keys := importSignatureEnv(t)
	c := sampleV1(t)
	pub := []byte(keys.Keys[0].Key.(ed25519.PublicKey))
	hs256 := func(key []byte) func([]byte) []byte {
		return func(input []byte) []byte { m := hmac.New(sha256.New, key); m.Write(input); return m.Sum(nil) }
	}
	for _, tc := range []struct {
		id  string
		sig map[string]any
	}{
		{"none", jwsFor(t, c, map[string]any{"alg": "none", "kid": "k1"}, func([]byte) []byte { return nil })},
		{"hs256-public-key", jwsFor(t, c, map[string]any{"alg": "HS256", "kid": "k1"}, hs256(pub))},
		{"hs256-jwk-x", jwsFor(t, c, map[string]any{"alg": "HS256", "kid": "k1"}, hs256([]byte(b64(pub))))},
		{"hs512", jwsFor(t, c, map[string]any{"alg": "HS512", "kid": "k1"}, hs256(pub))},
		{"unknown-alg", jwsFor(t, c, map[string]any{"alg": "XX999", "kid": "k1"}, hs256(pub))},
		{"no-alg", jwsFor(t, c, map[string]any{"kid": "k1"}, hs256(pub))},
	} {
		r := imp(tc.id, map[string]any{"card": withSignatures(t, tc.sig), "keys": keys})
		expect(t, r, http.StatusCreated)
		if got := importedCheck(t, r); got.Status != "unverified" || got.Reason == "" || got.Kid != "" {
			t.Errorf("%s: signature record %+v, want unverified", tc.id, got)
		}
	}
}

// TestA2AImportMalformedSignature: a signature that is not a JWS at all is invalid, a 400
// invalid_signature that stores nothing, or with allowInvalidSignature a card recorded invalid.
func TestA2AImportMalformedSignature(t *testing.T) {
	e, imp, priv, keys := importSignatureEnv(t)
	good := jwsFor(t, sampleV1(t), map[string]any{"alg": "EdDSA", "kid": "k1", "typ": "JOSE"}, edSigner(priv))
	for _, tc := range []struct {
		id  string
		sig map[string]any
	}{
		{"protected-not-base64url", map[string]any{"protected": "!!not base64!!", "signature": good["signature"]}},
		{"protected-not-json", map[string]any{"protected": b64([]byte("alg=EdDSA")), "signature": good["signature"]}},
		{"protected-an-array", map[string]any{"protected": b64([]byte(`["EdDSA"]`)), "signature": good["signature"]}},
		{"signature-not-base64url", map[string]any{"protected": good["protected"], "signature": "***"}},
	} {
		expect(t, imp(tc.id, map[string]any{"card": withSignatures(t, tc.sig), "keys": keys}), http.StatusBadRequest, "invalid_signature")
		expect(t, e.getCard("acme", tc.id), http.StatusNotFound)
		r := imp(tc.id, map[string]any{"card": withSignatures(t, tc.sig), "allowInvalidSignature": true})
		expect(t, r, http.StatusCreated)
		if got := importedCheck(t, r); got.Status != "invalid" || got.Reason == "" {
			t.Errorf("%s: signature record %+v, want invalid", tc.id, got)
		}
	}
}

// TestA2AImportUnreadableRequestKey: a key in the request's keys that go-jose cannot read is a 400
// malformed_json whose message is ours: the library's words (and its name) stay in the log.
func TestA2AImportUnreadableRequestKey(t *testing.T) {
	e, imp, _, _ := importSignatureEnv(t)
	for _, key := range []map[string]any{{"kty": "XYZ", "kid": "k1"}, {"kty": "OKP", "crv": "Ed25519", "kid": "k1"}} {
		r := imp("unreadable", map[string]any{"card": sampleV1(t), "keys": map[string]any{"keys": []any{key}}})
		expect(t, r, http.StatusBadRequest, "malformed_json")
		if msg := errMessage(t, r); strings.Contains(msg, "jose") || strings.Contains(msg, "json:") {
			t.Errorf("%v: the message is a library's: %q", key, msg)
		}
	}
	expect(t, e.getCard("acme", "unreadable"), http.StatusNotFound)
}

// TestA2AImportSeveralSignatures: any signature its key rejects makes the card invalid; otherwise
// one that verifies makes it verified, whatever the order; signatures without a key leave it
// unverified.
func TestA2AImportSeveralSignatures(t *testing.T) {
	_, imp, priv, keys := importSignatureEnv(t)
	_, stranger, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	c := sampleV1(t)
	valid := jwsFor(t, c, map[string]any{"alg": "EdDSA", "kid": "k1", "typ": "JOSE"}, edSigner(priv))
	keyless := jwsFor(t, c, map[string]any{"alg": "EdDSA", "kid": "k9", "typ": "JOSE"}, edSigner(stranger))
	forged := jwsFor(t, c, map[string]any{"alg": "EdDSA", "kid": "k1", "typ": "JOSE"}, edSigner(stranger))
	for _, tc := range []struct {
		id   string
		sigs []map[string]any
		// want is the record's status, kid and keySource; "" for a refused import (400).
		want [3]string
	}{
		{"keyless-then-valid", []map[string]any{keyless, valid}, [3]string{"verified", "k1", "request"}},
		{"valid-then-keyless", []map[string]any{valid, keyless}, [3]string{"verified", "k1", "request"}},
		{"valid-then-forged", []map[string]any{valid, forged}, [3]string{}},
		{"forged-then-valid", []map[string]any{forged, valid}, [3]string{}},
		{"all-forged", []map[string]any{forged, forged}, [3]string{}},
		{"all-keyless", []map[string]any{keyless, keyless}, [3]string{"unverified", "", ""}},
	} {
		r := imp(tc.id, map[string]any{"card": withSignatures(t, tc.sigs...), "keys": keys})
		if tc.want[0] == "" {
			expect(t, r, http.StatusBadRequest, "invalid_signature")
			continue
		}
		expect(t, r, http.StatusCreated)
		got := importedCheck(t, r)
		if [3]string{got.Status, got.Kid, got.KeySource} != tc.want || (got.Status == "unverified") != (got.Reason != "") {
			t.Errorf("%s: signature record %+v, want %v", tc.id, got, tc.want)
		}
	}
}

// TestA2AImportFetchFailures: a card URL that cannot be reached is a 502 fetch_failed (docs/a2a.md
// errors table); one that answers, but not with a card, is a 400.
func TestA2AImportFetchFailures(t *testing.T) {
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/close":
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				_ = conn.Close()
			}
		case "/error":
			http.Error(w, "broken", http.StatusInternalServerError)
		case "/html":
			_, _ = w.Write([]byte("<html>card</html>"))
		default:
			http.NotFound(w, r)
		}
	}))
	defer agent.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := "http://" + ln.Addr().String() + "/card.json"
	_ = ln.Close()
	e, imp, _, _ := importSignatureEnv(t)
	e.allowLoopback()
	for _, tc := range []struct {
		name, url string
		status    int
		code      string
	}{
		{"connection refused", closedPort, http.StatusBadGateway, "fetch_failed"},
		{"connection closed", agent.URL + "/close", http.StatusBadGateway, "fetch_failed"},
		// The server there failed: a bad gateway, as when it cannot be reached. A 4xx or a
		// body that is not a card is the URL's fault: 400.
		{"answers 500", agent.URL + "/error", http.StatusBadGateway, "fetch_failed"},
		{"answers 404", agent.URL + "/missing", http.StatusBadRequest, "invalid"},
		{"answers HTML", agent.URL + "/html", http.StatusBadRequest, "invalid"},
	} {
		r := imp("fetch", map[string]any{"url": tc.url})
		if r.status != tc.status || r.errCode(t) != tc.code {
			t.Errorf("%s: %d %s, want %d %s", tc.name, r.status, r.body, tc.status, tc.code)
		}
	}
	expect(t, e.getCard("acme", "fetch"), http.StatusNotFound)
}

// TestA2AImportRedirects: a card URL may redirect within its host (docs/a2a.md: "redirects only within
// the same host"); a redirect to another host, even an allowed one, is refused unfetched.
func TestA2AImportRedirects(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(samplesDir, "a2a-samples__adk_currency_agent__agent_card.json"))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	otherHits := 0
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		otherHits++
		mu.Unlock()
		_, _ = w.Write(raw)
	}))
	defer other.Close()
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/card.json":
			_, _ = w.Write(raw)
		case "/moved":
			http.Redirect(w, r, "/card.json", http.StatusFound)
		case "/moved-twice":
			http.Redirect(w, r, "/moved", http.StatusMovedPermanently)
		case "/away":
			http.Redirect(w, r, other.URL+"/card.json", http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	}))
	defer agent.Close()
	e, imp, _, _ := importSignatureEnv(t)
	e.allowLoopback()
	for _, path := range []string{"/moved", "/moved-twice"} {
		r := imp("m"+path[1:], map[string]any{"url": agent.URL + path})
		expect(t, r, http.StatusCreated)
		var rest struct {
			Name string
			A2A  struct{ Import struct{ URL, Format string } }
		}
		r.json(t, &rest)
		// The record names the URL asked for, not where it led.
		if rest.Name != "Currency Conversion Agent" || rest.A2A.Import.URL != agent.URL+path || rest.A2A.Import.Format != "0.3" {
			t.Errorf("%s: imported %s", path, r.body)
		}
	}
	expect(t, imp("away", map[string]any{"url": agent.URL + "/away"}), http.StatusBadRequest, "blocked_url")
	expect(t, e.getCard("acme", "away"), http.StatusNotFound)
	mu.Lock()
	defer mu.Unlock()
	if otherHits != 0 {
		t.Fatalf("the other host was fetched %d times", otherHits)
	}
}

// TestA2AImportRefusesJWSExtensions: a signature whose header uses a JWS extension never verifies,
// even with the right key: RFC 7515 §4.1.11 asks a verifier to reject a "crit" it does not
// understand, and we understand none. go-jose alone would let through an empty or null crit, and
// RFC 7797 unencoded payloads (b64: false) with or without crit; the card stays "unverified".
func TestA2AImportRefusesJWSExtensions(t *testing.T) {
	_, imp, priv, keys := importSignatureEnv(t)
	c := sampleV1(t)
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
		{"crit-exp", jwsFor(t, c, header(map[string]any{"crit": []string{"exp"}, "exp": 1}), edSigner(priv))},
		{"crit-empty", jwsFor(t, c, header(map[string]any{"crit": []string{}}), edSigner(priv))},
		{"crit-null", jwsFor(t, c, header(map[string]any{"crit": nil}), edSigner(priv))},
		{"crit-b64-true", jwsFor(t, c, header(map[string]any{"crit": []string{"b64"}, "b64": true}), edSigner(priv))},
		{"crit-b64-false", jwsFor(t, c, header(map[string]any{"crit": []string{"b64"}, "b64": false}), unencoded)},
		{"b64-false", jwsFor(t, c, header(map[string]any{"b64": false}), unencoded)},
	} {
		r := imp(tc.id, map[string]any{"card": withSignatures(t, tc.sig), "keys": keys})
		expect(t, r, http.StatusCreated)
		if got := importedCheck(t, r); got.Status != "unverified" || got.Reason == "" || got.Kid != "" {
			t.Errorf("%s: signature record %+v, want unverified", tc.id, got)
		}
	}
	r := imp("control", map[string]any{"card": withSignatures(t, jwsFor(t, c, header(nil), edSigner(priv))), "keys": keys})
	if got := importedCheck(t, r); got.Status != "verified" {
		t.Fatalf("control: %+v", got)
	}
}

// TestA2AImportKeyMustFitTheAlgorithm: a key of the right kid but another curve or type (go-jose
// reads P-384 and RSA keys) does not check an ES256 signature; with no usable key the card is
// "unverified", not "invalid".
func TestA2AImportKeyMustFitTheAlgorithm(t *testing.T) {
	_, imp, _, _ := importSignatureEnv(t)
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	// Any 64 bytes: the key must not be used, so the signature is never looked at.
	sign := func([]byte) []byte { return make([]byte, 64) }
	for _, alg := range []string{"ES256", ""} {
		keys := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &p384.PublicKey, KeyID: "k1", Algorithm: alg}}}
		sig := jwsFor(t, sampleV1(t), map[string]any{"alg": "ES256", "kid": "k1", "typ": "JOSE"}, sign)
		r := imp("p384-"+alg, map[string]any{"card": withSignatures(t, sig), "keys": keys})
		expect(t, r, http.StatusCreated)
		if got := importedCheck(t, r); got.Status != "unverified" || got.Kid != "" {
			t.Errorf("P-384 key, alg %q: signature record %+v, want unverified", alg, got)
		}
	}
}
