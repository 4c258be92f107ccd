package authz

import (
	"testing"
	"time"
)

// TestVerifiedTokenMemoryKeepsExpiry: a token verified once is not honoured past its expiry
// (plus leeway) because it was remembered.
func TestVerifiedTokenMemoryKeepsExpiry(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	tk, err := NewTokens(TokenConfig{Algorithm: "HS256", Secret: []byte("0123456789abcdef0123456789abcdef"),
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
