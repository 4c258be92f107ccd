package aicatalog_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentcards/agentcards/authz/token"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/aicatalog"
)

// TestPayload: the payload is the JCS form of the document without signature.jws and the
// catalog's own additionalSignatures: the order of members, the JWS and those signatures do not
// change it; members this package does not know are kept, and so are members named jws or
// additionalSignatures elsewhere; a signature that is not an object is refused.
func TestPayload(t *testing.T) {
	a := `{"specVersion":"1.0","entries":[],"x-other":{"b":1,"a":"<&>"},"additionalSignatures":[1],"signature":{"signer":"s","profile":"p","issuedAt":"2026-01-02T03:04:05Z","jws":"one"}}`
	b := `{"signature":{"jws":"two","issuedAt":"2026-01-02T03:04:05Z","profile":"p","signer":"s"},"x-other":{"a":"<&>","b":1},"entries":[{"jws":"kept","additionalSignatures":"kept"}],"specVersion":"1.0"}`
	pa, err := aicatalog.Payload([]byte(a))
	if err != nil {
		t.Fatal(err)
	}
	pb, err := aicatalog.Payload([]byte(b))
	if err != nil {
		t.Fatal(err)
	}
	wantA := `{"entries":[],"signature":{"issuedAt":"2026-01-02T03:04:05Z","profile":"p","signer":"s"},"specVersion":"1.0","x-other":{"a":"<&>","b":1}}`
	wantB := `{"entries":[{"additionalSignatures":"kept","jws":"kept"}],"signature":{"issuedAt":"2026-01-02T03:04:05Z","profile":"p","signer":"s"},"specVersion":"1.0","x-other":{"a":"<&>","b":1}}`
	if string(pa) != wantA || string(pb) != wantB {
		t.Fatalf("payloads\n%s\n%s\nwant\n%s\n%s", pa, pb, wantA, wantB)
	}
	for _, bad := range []string{`[]`, `null`, `{"signature": "x"}`, `{"signature": null}`, `{`} {
		if _, err := aicatalog.Payload([]byte(bad)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// TestSign: a signed catalog verifies over its payload with the signer's key, names the draft's
// typ, and a catalog changed after signing does not verify.
func TestSign(t *testing.T) {
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
	updated := time.Date(2026, 5, 6, 7, 8, 9, 500, time.FixedZone("x", 3600))
	c := aicatalog.Catalog{SpecVersion: aicatalog.SpecVersion, Host: aicatalog.HostInfo{DisplayName: "Acme"},
		Entries: []aicatalog.CatalogEntry{aicatalog.CardEntry("acme", cards.Card{AgentID: "rev", Name: "Reviewer", UpdatedAt: updated}, "https://x/rev")}}
	if err := aicatalog.Sign(keys, &c, "https://x/.well-known/jwks.json", time.Date(2026, 5, 6, 7, 8, 9, 999, time.UTC)); err != nil {
		t.Fatal(err)
	}
	if s := c.Signature; s.Profile != aicatalog.Profile || !s.IssuedAt.Equal(time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)) || !strings.Contains(s.JWS, "..") {
		t.Fatalf("signature %+v", s)
	}
	if e := c.Entries[0]; e.Identifier != "urn:agentcards:acme:rev" || e.UpdatedAt.Location() != time.UTC || !e.UpdatedAt.Equal(updated) {
		t.Fatalf("entry %+v", e)
	}
	doc, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := aicatalog.Payload(doc)
	if err != nil {
		t.Fatal(err)
	}
	h, err := token.VerifyDetached(keys.JWKS(), c.Signature.JWS, payload)
	if err != nil {
		t.Fatalf("the signature does not verify: %v", err)
	}
	if h.ExtraHeaders["typ"] != aicatalog.JWSType || h.KeyID != k.ID {
		t.Fatalf("protected header %+v", h)
	}
	c.Entries[0].Description = "changed"
	doc, _ = json.Marshal(c)
	if payload, _ = aicatalog.Payload(doc); payload == nil {
		t.Fatal("no payload")
	}
	if _, err := token.VerifyDetached(keys.JWKS(), c.Signature.JWS, payload); err == nil {
		t.Fatal("a changed catalog verifies")
	}
}
