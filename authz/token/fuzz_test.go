package token

import (
	"testing"
	"time"
)

// FuzzVerify: a bearer token of any text is refused, never panics, unless it is the one token
// the test minted: a mutation of a valid token never verifies (no forgery, no alg confusion).
func FuzzVerify(f *testing.F) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	tk, err := NewTokens(Config{Algorithm: "HS256", Secret: []byte("0123456789abcdef0123456789abcdef"),
		Leeway: 10 * time.Second, Now: func() time.Time { return now }})
	if err != nil {
		f.Fatal(err)
	}
	valid, err := tk.Mint("alice", "acme", time.Minute, false)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(valid)
	f.Add("eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.eyJzdWIiOiJhbGljZSJ9.")
	f.Add("a.b.c")
	f.Add("")
	f.Fuzz(func(t *testing.T, raw string) {
		p, err := tk.Verify(raw)
		if err != nil {
			return
		}
		if raw != valid {
			t.Fatalf("a token the test never minted verified as %+v: %q", p, raw)
		}
	})
}
