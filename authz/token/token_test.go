package token

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/agentcards/agentcards/authz"
)

// TestVerifiedTokenMemoryKeepsExpiry: a token verified once is not honoured past its expiry
// (plus leeway) because it was remembered.
func TestVerifiedTokenMemoryKeepsExpiry(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	tk, err := NewTokens(Config{Algorithm: "HS256", Secret: []byte("0123456789abcdef0123456789abcdef"),
		Leeway: 10 * time.Second, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tk.Mint("alice", "acme", time.Minute, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		advance time.Duration
		ok      bool
	}{{0, true}, {0, true}, {65 * time.Second, true}, {5 * time.Second, false}, {0, false}} {
		now = now.Add(step.advance)
		p, err := tk.Verify(tok)
		if (err == nil) != step.ok || (step.ok && p.Subject != "alice") {
			t.Fatalf("at %s: %+v %v, want ok=%v", now.Format(time.TimeOnly), p, err, step.ok)
		}
	}
}

// TestValidUntil: a token's end is its exp plus the leeway; a token no longer valid has none.
func TestValidUntil(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	tk, err := NewTokens(Config{Algorithm: "HS256", Secret: []byte("0123456789abcdef0123456789abcdef"),
		Leeway: 10 * time.Second, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tk.Mint("alice", "acme", time.Minute, false)
	if err != nil {
		t.Fatal(err)
	}
	want := now.Add(time.Minute + 10*time.Second)
	if got, err := tk.ValidUntil(tok); err != nil || !got.Equal(want) {
		t.Fatalf("ValidUntil: %v %v, want %v", got, err, want)
	}
	now = want.Add(time.Second)
	if got, err := tk.ValidUntil(tok); err == nil {
		t.Fatalf("ValidUntil after the end: %v, want an error", got)
	}
}

// TestVerifyRefusesWhatRFCsForbid: a JWS whose header lists "crit" extensions (RFC 7515 §4.1.11:
// we understand none, and an empty list must not be sent) and a NumericDate that is not a JSON
// number (RFC 7519 §2) are refused, even when golang-jwt would decode them. Each case is paired
// with the same token made valid, so only the named defect can be the cause.
func TestVerifyRefusesWhatRFCsForbid(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	secret := []byte("0123456789abcdef0123456789abcdef")
	tk, err := NewTokens(Config{Algorithm: "HS256", Secret: secret, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	sign := func(header map[string]any, claims jwt.MapClaims) string {
		tok := jwt.NewWithClaims(jwt.SigningMethodHS256, claims)
		for k, v := range header {
			tok.Header[k] = v
		}
		s, err := tok.SignedString(secret)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	claims := func(extra jwt.MapClaims) jwt.MapClaims {
		c := jwt.MapClaims{"sub": "alice", "tenant": "acme", "exp": now.Add(time.Hour).Unix()}
		for k, v := range extra {
			c[k] = v
		}
		return c
	}
	if _, err := tk.Verify(sign(nil, claims(jwt.MapClaims{"nbf": now.Unix(), "iat": now.Unix()}))); err != nil {
		t.Fatalf("valid token: %v", err)
	}
	exp, past := strconv.FormatInt(now.Add(time.Hour).Unix(), 10), strconv.FormatInt(now.Add(-time.Minute).Unix(), 10)
	for name, tok := range map[string]string{
		"crit with an extension": sign(map[string]any{"crit": []string{"exp"}, "exp": now.Add(time.Hour).Unix()}, claims(nil)),
		"crit b64":               sign(map[string]any{"crit": []string{"b64"}, "b64": true}, claims(nil)),
		"empty crit":             sign(map[string]any{"crit": []string{}}, claims(nil)),
		"null crit":              sign(map[string]any{"crit": nil}, claims(nil)),
		"exp as a string":        sign(nil, claims(jwt.MapClaims{"exp": exp})),
		"EXP as a string":        sign(nil, jwt.MapClaims{"sub": "alice", "tenant": "acme", "EXP": exp}),
		"TENANT for tenant":      sign(nil, jwt.MapClaims{"sub": "alice", "TENANT": "acme", "exp": now.Add(time.Hour).Unix()}),
		"Platform_Admin":         sign(nil, claims(jwt.MapClaims{"Platform_Admin": true})),
		"nbf as a string":        sign(nil, claims(jwt.MapClaims{"nbf": past})),
		"iat as a string":        sign(nil, claims(jwt.MapClaims{"iat": past})),
		"nbf null":               sign(nil, claims(jwt.MapClaims{"nbf": nil})),
		"iat an object":          sign(nil, claims(jwt.MapClaims{"iat": map[string]any{}})),
		"exp a boolean":          sign(nil, claims(jwt.MapClaims{"exp": true})),
	} {
		if p, err := tk.Verify(tok); !errors.Is(err, authz.ErrUnauthenticated) {
			t.Errorf("%s: %+v %v, want authz.ErrUnauthenticated", name, p, err)
		}
	}
}
