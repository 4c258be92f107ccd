package webtest

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/gowebpki/jcs"

	"github.com/agentcards/agentcards/authz/token"
)

// recorder is a testing.TB that records failures instead of reporting them, to test the helpers'
// verdicts and messages.
type recorder struct {
	testing.TB
	failures []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

// run calls f with a recorder on a goroutine of its own, so that Fatalf ends only f.
func run(t *testing.T, f func(tb testing.TB)) []string {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r.failures
}

func TestJSONEqual(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{`{"a":1,"b":[true,null]}`, ` { "b" : [true, null], "a" : 1.0 } `},
		{`{"n":12345678901234567890}`, `{"n":1.2345678901234567890e19}`},
		{`[]`, `[]`},
	} {
		if f := run(t, func(tb testing.TB) { JSONEqual(tb, "doc", []byte(c.got), []byte(c.want)) }); len(f) != 0 {
			t.Errorf("%s vs %s: %q", c.got, c.want, f)
		}
	}
	for _, c := range []struct {
		got, want string
		mention   []string
	}{
		{`{"a":{"b":1}}`, `{"a":{"b":2}}`, []string{"$.a.b:", "got  1", "want 2"}},
		{`{"n":12345678901234567890}`, `{"n":12345678901234567891}`, []string{"$.n:"}},
		{`{"x":1}`, `{"y":1}`, []string{"$.x: unexpected 1", "$.y: missing, want 1"}},
		{`{"l":[1,2]}`, `{"l":[1,3,4]}`, []string{"$.l: 2 elements, want 3", "$.l[1]:", "$.l[2]: missing, want 4"}},
		{`{"a b":"x"}`, `{"a b":"y"}`, []string{`$["a b"]:`}},
		{`{"a":[1]}`, `{"a":{"0":1}}`, []string{"$.a:", `want {"0":1}`}},
		{`{} {}`, `{}`, []string{"not one JSON value"}},
		{`{"a":`, `{}`, []string{"not one JSON value"}},
	} {
		f := run(t, func(tb testing.TB) { JSONEqual(tb, "doc", []byte(c.got), []byte(c.want)) })
		if len(f) != 1 {
			t.Errorf("%s vs %s: %d failures, want 1: %q", c.got, c.want, len(f), f)
			continue
		}
		for _, m := range c.mention {
			if !strings.Contains(f[0], m) {
				t.Errorf("%s vs %s: %q does not mention %q", c.got, c.want, f[0], m)
			}
		}
	}
	got := map[string]any{"a": []string{"x"}, "n": 1}
	if f := run(t, func(tb testing.TB) { SameJSON(tb, "map", got, map[string]any{"a": []any{"x"}, "n": 1.0}) }); len(f) != 0 {
		t.Errorf("SameJSON: %q", f)
	}
	if f := run(t, func(tb testing.TB) { SameJSON(tb, "map", got, map[string]any{"a": []any{"y"}, "n": 1}) }); len(f) != 1 || !strings.Contains(f[0], "$.a[0]") {
		t.Errorf("SameJSON: %q", f)
	}
}

func TestEventually(t *testing.T) {
	n := 0
	if f := run(t, func(tb testing.TB) { Eventually(tb, time.Second, "third try", func() bool { n++; return n == 3 }) }); len(f) != 0 || n != 3 {
		t.Errorf("%d tries, failures %q", n, f)
	}
	start := time.Now()
	f := run(t, func(tb testing.TB) { Eventually(tb, 50*time.Millisecond, "never", func() bool { return false }) })
	if len(f) != 1 || !strings.Contains(f[0], "never") || time.Since(start) < 50*time.Millisecond {
		t.Errorf("failures %q after %s", f, time.Since(start))
	}
}

func testKeys(t *testing.T) (*token.ServiceKeys, []byte) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k, err := token.NewServiceKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := token.NewServiceKeys(k)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := json.Marshal(keys.JWKS())
	if err != nil {
		t.Fatal(err)
	}
	return keys, doc
}

func TestVerifyJWT(t *testing.T) {
	keys, jwks := testKeys(t)
	_, otherJWKS := testKeys(t)
	claims := token.DelegationClaims{Tenant: "acme", RegisteredClaims: jwt.RegisteredClaims{
		Issuer: "agentcards", ExpiresAt: jwt.NewNumericDate(time.Now().Add(time.Minute)),
	}}
	raw, err := keys.SignJWT(claims)
	if err != nil {
		t.Fatal(err)
	}
	c, err := VerifyJWT[token.DelegationClaims](jwks, raw, jwt.WithIssuer("agentcards"))
	if err != nil || c.Tenant != "acme" {
		t.Fatalf("%+v %v", c, err)
	}
	if _, err := VerifyJWT[token.DelegationClaims](jwks, raw, jwt.WithIssuer("someone")); err == nil {
		t.Error("wrong issuer verified")
	}
	if _, err := VerifyJWT[token.DelegationClaims](otherJWKS, raw); err == nil {
		t.Error("verified with another key set")
	}
	claims.ExpiresAt = nil
	noExp, _ := keys.SignJWT(claims)
	if _, err := VerifyJWT[token.DelegationClaims](jwks, noExp); err == nil {
		t.Error("a token without expiry verified")
	}
	hs, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"exp": time.Now().Add(time.Minute).Unix()}).SignedString([]byte(Secret))
	if _, err := VerifyJWT[jwt.MapClaims](jwks, hs); err == nil {
		t.Error("an HS256 token verified")
	}
}

func TestVerifyCard(t *testing.T) {
	keys, jwks := testKeys(t)
	card := map[string]any{"name": "Code Reviewer", "skills": []any{map[string]any{"id": "review"}}}
	unsigned, _ := json.Marshal(card)
	payload, err := jcs.Transform(unsigned)
	if err != nil {
		t.Fatal(err)
	}
	protected, sig, err := keys.SignDetached(map[string]any{"typ": "JOSE"}, payload)
	if err != nil {
		t.Fatal(err)
	}
	card["signatures"] = []any{map[string]any{"protected": protected, "signature": sig}}
	signed, _ := json.MarshalIndent(card, "", "  ") // any spacing: the payload is the JCS form
	if err := VerifyCard(jwks, signed); err != nil {
		t.Fatal(err)
	}
	tampered := strings.Replace(string(signed), "Code Reviewer", "Code Reviewes", 1)
	if err := VerifyCard(jwks, []byte(tampered)); err == nil {
		t.Error("a one-byte change verified")
	}
	if err := VerifyCard(jwks, unsigned); err == nil {
		t.Error("a card without signatures verified")
	}
	_, other := testKeys(t)
	if err := VerifyCard(other, signed); err == nil {
		t.Error("verified with another key set")
	}
}
