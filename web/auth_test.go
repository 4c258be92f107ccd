package web_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/agentcards/agentcards/authz/token"
	"github.com/agentcards/agentcards/storage/storagetest"
)

func signed(t *testing.T, method jwt.SigningMethod, key any, claims jwt.MapClaims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(method, claims).SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestAuthenticationFailures(t *testing.T) {
	e := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	e.mkTenant("acme", "alice")
	path := "/v1/tenants/acme/cards"
	now := time.Now()
	valid := jwt.MapClaims{"sub": "alice", "tenant": "acme", "exp": now.Add(time.Hour).Unix()}
	expect(t, e.do("GET", path, signed(t, jwt.SigningMethodHS256, testSecret, valid), nil), http.StatusOK)

	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	unsigned, err := jwt.NewWithClaims(jwt.SigningMethodNone, valid).SignedString(jwt.UnsafeAllowNoneSignatureType)
	if err != nil {
		t.Fatal(err)
	}
	tokens := map[string]string{
		"expired":         signed(t, jwt.SigningMethodHS256, testSecret, jwt.MapClaims{"sub": "alice", "tenant": "acme", "exp": now.Add(-time.Hour).Unix()}),
		"no exp":          signed(t, jwt.SigningMethodHS256, testSecret, jwt.MapClaims{"sub": "alice", "tenant": "acme"}),
		"not yet valid":   signed(t, jwt.SigningMethodHS256, testSecret, jwt.MapClaims{"sub": "alice", "tenant": "acme", "exp": now.Add(2 * time.Hour).Unix(), "nbf": now.Add(time.Hour).Unix()}),
		"wrong key":       signed(t, jwt.SigningMethodHS256, []byte("another-secret-another-secret-another"), valid),
		"HS384":           signed(t, jwt.SigningMethodHS384, testSecret, valid),
		"ES256":           signed(t, jwt.SigningMethodES256, ecKey, valid),
		"alg none":        unsigned,
		"no subject":      signed(t, jwt.SigningMethodHS256, testSecret, jwt.MapClaims{"tenant": "acme", "exp": now.Add(time.Hour).Unix()}),
		"no tenant":       signed(t, jwt.SigningMethodHS256, testSecret, jwt.MapClaims{"sub": "alice", "exp": now.Add(time.Hour).Unix()}),
		"malformed":       "not.a.jwt",
		"garbage":         "!!!",
		"truncated":       signed(t, jwt.SigningMethodHS256, testSecret, valid)[:40],
		"tampered claims": tamper(signed(t, jwt.SigningMethodHS256, testSecret, valid)),
		// RFC 7515 §4.1.11: we understand no "crit" extension, and an empty list must not be sent.
		"crit":       withHeader(t, "crit", []string{"exp"}, valid),
		"empty crit": withHeader(t, "crit", []string{}, valid),
		// RFC 7519 §2: a NumericDate is a JSON number, which golang-jwt alone does not insist on.
		"exp a string": signed(t, jwt.SigningMethodHS256, testSecret, jwt.MapClaims{"sub": "alice", "tenant": "acme", "exp": strconv.FormatInt(now.Add(time.Hour).Unix(), 10)}),
		"nbf a string": signed(t, jwt.SigningMethodHS256, testSecret, jwt.MapClaims{"sub": "alice", "tenant": "acme", "exp": now.Add(time.Hour).Unix(), "nbf": strconv.FormatInt(now.Unix(), 10)}),
		"iat a string": signed(t, jwt.SigningMethodHS256, testSecret, jwt.MapClaims{"sub": "alice", "tenant": "acme", "exp": now.Add(time.Hour).Unix(), "iat": strconv.FormatInt(now.Unix(), 10)}),
	}
	for name, tok := range tokens {
		t.Run(name, func(t *testing.T) {
			r := e.do("GET", path, tok, nil)
			expect(t, r, http.StatusUnauthorized, "unauthorized")
			if got := r.header.Get("WWW-Authenticate"); got != `Bearer realm="agentcards", error="invalid_token"` {
				t.Fatalf("WWW-Authenticate %q", got)
			}
			// The message says why as far as a client may know.
			want := map[string]string{"expired": "has expired", "not yet valid": "not valid yet"}[name]
			if want == "" {
				want = "not valid for this server"
			}
			if !strings.Contains(string(r.body), want) {
				t.Fatalf("message %s, want %q", r.body, want)
			}
		})
	}
	for _, h := range []string{"", "Basic YWxpY2U6cHc=", "Bearer", "Bearer "} {
		r := e.do("GET", path, "", nil, "Authorization", h)
		expect(t, r, http.StatusUnauthorized, "unauthorized")
		if got := r.header.Get("WWW-Authenticate"); got != `Bearer realm="agentcards"` || !strings.Contains(string(r.body), "bearer token is required") {
			t.Fatalf("Authorization %q: %q %s", h, got, r.body)
		}
	}
}

// withHeader signs claims with the test secret and one more protected header parameter.
func withHeader(t *testing.T, name string, value any, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodHS256, claims)
	tok.Header[name] = value
	s, err := tok.SignedString(testSecret)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// tamper swaps the payload of a token for another one, keeping the signature.
func tamper(tok string) string {
	parts := strings.Split(tok, ".")
	other := strings.Split(signedNoT(jwt.MapClaims{"sub": "mallory", "tenant": "acme", "exp": time.Now().Add(time.Hour).Unix(), "platform_admin": true}), ".")
	return parts[0] + "." + other[1] + "." + parts[2]
}

func signedNoT(c jwt.MapClaims) string {
	s, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString([]byte("some-other-key-some-other-key-some"))
	return s
}

func TestTokenIssuerAudienceAndLeeway(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	tk, err := token.NewTokens(token.Config{Algorithm: "HS256", Secret: testSecret, Issuer: "https://issuer.example",
		Audience: "agentcards", Leeway: 30 * time.Second, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	ok := jwt.MapClaims{"sub": "a", "tenant": "t", "iss": "https://issuer.example", "aud": "agentcards", "exp": now.Add(-10 * time.Second).Unix()}
	if _, err := tk.Verify(signed(t, jwt.SigningMethodHS256, testSecret, ok)); err != nil {
		t.Fatalf("within leeway: %v", err)
	}
	for name, c := range map[string]jwt.MapClaims{
		"past leeway":    {"sub": "a", "tenant": "t", "iss": "https://issuer.example", "aud": "agentcards", "exp": now.Add(-time.Minute).Unix()},
		"wrong issuer":   {"sub": "a", "tenant": "t", "iss": "https://evil.example", "aud": "agentcards", "exp": now.Add(time.Hour).Unix()},
		"no issuer":      {"sub": "a", "tenant": "t", "aud": "agentcards", "exp": now.Add(time.Hour).Unix()},
		"wrong audience": {"sub": "a", "tenant": "t", "iss": "https://issuer.example", "aud": "other", "exp": now.Add(time.Hour).Unix()},
	} {
		if _, err := tk.Verify(signed(t, jwt.SigningMethodHS256, testSecret, c)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	minted, err := tk.Mint("a", "t", time.Minute, false)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := tk.Verify(minted); err != nil || p.Subject != "a" || p.Tenant != "t" || p.PlatformAdmin {
		t.Fatalf("minted token: %+v %v", p, err)
	}
}

func TestAsymmetricTokensAndConfiguredAdmins(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tk, err := token.NewTokens(token.Config{Algorithm: "ES256", PublicKeys: []crypto.PublicKey{other.Public(), key.Public()},
		PrivateKey: key, PlatformAdmins: []string{"ops"}})
	if err != nil {
		t.Fatal(err)
	}
	exp := time.Now().Add(time.Hour).Unix()
	p, err := tk.Verify(signed(t, jwt.SigningMethodES256, key, jwt.MapClaims{"sub": "ops", "exp": exp}))
	if err != nil || !p.PlatformAdmin {
		t.Fatalf("configured admin: %+v %v", p, err)
	}
	if _, err := tk.Verify(signed(t, jwt.SigningMethodHS256, testSecret, jwt.MapClaims{"sub": "ops", "exp": exp})); err == nil {
		t.Fatal("HS256 token accepted by an ES256 server")
	}
	wrong, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if _, err := tk.Verify(signed(t, jwt.SigningMethodES256, wrong, jwt.MapClaims{"sub": "ops", "exp": exp})); err == nil {
		t.Fatal("token of an unknown key accepted")
	}
	minted, err := tk.Mint("bob", "acme", time.Minute, false)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := tk.Verify(minted); err != nil || p.Subject != "bob" || p.PlatformAdmin {
		t.Fatalf("minted ES256 token: %+v %v", p, err)
	}
}
