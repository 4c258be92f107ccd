package webtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"testing"
	"time"

	"github.com/agentcards/agentcards/authz/token"
)

// Secret is the HS256 key of Tokens; tests that sign tokens of their own (malformed ones, or
// with claims Mint does not make) use it so that the server under test accepts the signature.
const Secret = "0123456789abcdef0123456789abcdef-test-secret"

// Tokens returns the HS256 token service the test servers verify with, so that tests mint
// tokens exactly as the service does rather than by hand.
func Tokens(t testing.TB) *token.Tokens {
	t.Helper()
	tokens, err := token.NewTokens(token.Config{Algorithm: "HS256", Secret: []byte(Secret), Leeway: time.Second})
	if err != nil {
		t.Fatalf("webtest: %v", err)
	}
	return tokens
}

// Mint returns a token valid for an hour for subject in tenant (tenant "" with platformAdmin
// for a platform admin), failing the test if tokens refuse it.
func Mint(t testing.TB, tokens *token.Tokens, subject, tenant string, platformAdmin bool) string {
	t.Helper()
	tok, err := tokens.Mint(subject, tenant, time.Hour, platformAdmin)
	if err != nil {
		t.Fatalf("webtest: mint a token for %q in %q: %v", subject, tenant, err)
	}
	return tok
}

// ServiceKeys returns a service key set with one fresh P-256 key, as the server signs delegation
// tokens and A2A cards with, so tests need not build keys by hand.
func ServiceKeys(t testing.TB) *token.ServiceKeys {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("webtest: %v", err)
	}
	k, err := token.NewServiceKey(priv)
	if err != nil {
		t.Fatalf("webtest: %v", err)
	}
	keys, err := token.NewServiceKeys(k)
	if err != nil {
		t.Fatalf("webtest: %v", err)
	}
	return keys
}
