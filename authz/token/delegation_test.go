package token

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/agentcards/agentcards/authz"
)

// TestVerifyDelegationRefusesWhatRFCsForbid: a delegation token coming back to us is held to the
// same rules as a user's: no crit header, dates that are JSON numbers, claim names in their case.
func TestVerifyDelegationRefusesWhatRFCsForbid(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k, err := NewServiceKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := NewServiceKeys(k)
	if err != nil {
		t.Fatal(err)
	}
	sign := func(header map[string]any, claims jwt.MapClaims) string {
		tok := jwt.NewWithClaims(jwt.SigningMethodES256, claims)
		tok.Header["kid"] = k.ID
		for name, v := range header {
			tok.Header[name] = v
		}
		s, err := tok.SignedString(priv)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	exp := now.Add(time.Hour).Unix()
	claims := func(extra jwt.MapClaims) jwt.MapClaims {
		c := jwt.MapClaims{"iss": "agentcards", "sub": "reviewer", "exp": exp, "tenant": "acme",
			"caller": "olga", "capability": "review_pr", "delegationId": "d1", "depth": 1}
		for name, v := range extra {
			c[name] = v
		}
		return c
	}
	verify := func(raw string) error {
		_, err := keys.VerifyDelegation(raw, "agentcards", 0, func() time.Time { return now })
		return err
	}
	if err := verify(sign(nil, claims(nil))); err != nil {
		t.Fatalf("valid delegation token: %v", err)
	}
	for name, raw := range map[string]string{
		"crit":            sign(map[string]any{"crit": []string{"b64"}, "b64": true}, claims(nil)),
		"exp as a string": sign(nil, claims(jwt.MapClaims{"exp": strconv.FormatInt(exp, 10)})),
		"EXP for exp":     sign(nil, upperExp(claims(nil))),
		"Tenant":          sign(nil, claims(jwt.MapClaims{"Tenant": "other"})),
		"DEPTH":           sign(nil, claims(jwt.MapClaims{"DEPTH": 0})),
	} {
		if err := verify(raw); !errors.Is(err, authz.ErrUnauthenticated) {
			t.Errorf("%s: %v, want authz.ErrUnauthenticated", name, err)
		}
	}
}

// upperExp renames the exp claim EXP, which encoding/json would still read as exp.
func upperExp(c jwt.MapClaims) jwt.MapClaims {
	c["EXP"] = c["exp"]
	delete(c, "exp")
	return c
}

// TestVerifyDelegationRemembers: a delegation token verified once is remembered, and the memory
// answers as the full check would: the same principal within the token's window, a refusal
// once it expired or before it is valid (with the caller's leeway), and for another issuer.
func TestVerifyDelegationRemembers(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k, err := NewServiceKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := NewServiceKeys(k)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := keys.SignJWT(DelegationClaims{
		RegisteredClaims: jwt.RegisteredClaims{Issuer: "agentcards", Subject: "reviewer",
			NotBefore: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(time.Minute))},
		Tenant: "acme", Caller: "olga", Capability: "review_pr", DelegationID: "d1", Depth: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	verify := func(at time.Time, issuer string, leeway time.Duration) (authz.Principal, error) {
		return keys.VerifyDelegation(raw, issuer, leeway, func() time.Time { return at })
	}
	want := authz.Principal{Subject: authz.AgentSubject("reviewer"), Tenant: "acme", Depth: 2, Delegated: true}
	for i := range 2 {
		if p, err := verify(now, "agentcards", 0); err != nil || p != want {
			t.Fatalf("verification %d: %+v %v, want %+v", i+1, p, err, want)
		}
	}
	if n := len(keys.verified); n != 1 {
		t.Fatalf("%d tokens remembered, want 1", n)
	}
	for name, c := range map[string]struct {
		at     time.Time
		issuer string
		leeway time.Duration
		ok     bool
	}{
		"just before exp":        {now.Add(time.Minute - time.Second), "agentcards", 0, true},
		"at exp":                 {now.Add(time.Minute), "agentcards", 0, false},
		"at exp, within leeway":  {now.Add(time.Minute), "agentcards", 5 * time.Second, true},
		"before nbf":             {now.Add(-time.Second), "agentcards", 0, false},
		"before nbf, in leeway":  {now.Add(-time.Second), "agentcards", 5 * time.Second, true},
		"another issuer":         {now, "elsewhere", 0, false},
		"after exp, past leeway": {now.Add(time.Hour), "agentcards", 5 * time.Second, false},
	} {
		_, err := verify(c.at, c.issuer, c.leeway)
		if c.ok && err != nil || !c.ok && !errors.Is(err, authz.ErrUnauthenticated) {
			t.Errorf("%s: %v, want ok=%v", name, err, c.ok)
		}
	}
}
