package a2a_test

import (
	"testing"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/a2a/a2atest"
)

// A refresh's signature check (docs/lifecycle.md, Refresh from the source: refused), through
// a2a.Service.Refresh: which fetched cards are applied, and what a refused one leaves.

// TestA2ARefreshKeepsAVerifiedSignature: once a card applied had a verified signature, a card
// fetched whose signature a key rejects, or with no signature that verifies, is "refused", even
// with allowInvalidSignature: the card stays as it was, its import record too, and the refusal is
// recorded in its source as a new revision. A card signed again with the key is applied.
func TestA2ARefreshKeepsAVerifiedSignature(t *testing.T) {
	forEachDialect(t, func(t *testing.T, f *fixture) {
		f.allowLoopback()
		src := newCardSource(t)
		priv, keys := edKey(t)
		src.serve(t, a2atest.SignEd25519(t, priv, "k1", "", a2atest.SampleV1(t)))
		f.mustImport(map[string]any{"agentId": "geo", "url": src.cardURL(), "keys": keys})
		verified := cards.ImportRecord{Format: "1.0", URL: src.cardURL(),
			Signature: cards.SignatureCheck{Status: "verified", KeyID: "k1", KeySource: "request"}}
		wantImport(t, "imported", f.card("geo"), verified)

		changed := func() map[string]any {
			c := a2atest.SampleV1(t)
			c["name"] = "Someone Else"
			return c
		}
		tampered := a2atest.SignEd25519(t, priv, "k1", "", a2atest.SampleV1(t))
		tampered["name"] = "Someone Else"
		stranger, _ := edKey(t) // a key keys does not hold
		for i, tc := range []struct {
			name   string
			served map[string]any
			body   map[string]any
			reason string // a part of the refusal's reason
		}{
			{"a key rejects it", tampered, map[string]any{"keys": keys}, "allowInvalidSignature"},
			{"a key rejects it, allowed", tampered, map[string]any{"keys": keys, "allowInvalidSignature": true}, "verified"},
			{"unsigned", changed(), nil, "verified"},
			{"signed, no keys", a2atest.SignEd25519(t, priv, "k1", "", changed()), nil, "verified"},
			{"signed by another key", a2atest.SignEd25519(t, stranger, "k2", "", changed()),
				map[string]any{"keys": keys}, "verified"},
		} {
			src.serve(t, tc.served)
			got := f.mustRefresh("geo", tc.body)
			refused := cards.RefreshOutcome{Outcome: "refused", Reason: tc.reason}
			if !sameOutcome(got.RefreshOutcome, refused) {
				t.Errorf("%s: outcome %+v, want refused saying %q", tc.name, got.RefreshOutcome, tc.reason)
			}
			c := got.Card
			if want := int64(2 + i); c.Name != "GeoSpatial Route Planner Agent" || c.Revision != want {
				t.Errorf("%s: card %q at revision %d, want the card as it was at revision %d", tc.name, c.Name, c.Revision, want)
			}
			wantSource(t, tc.name, c, cards.Source{URL: src.cardURL(), Verified: true, RefreshedAt: c.Source.RefreshedAt, Refresh: &refused})
			wantImport(t, tc.name, c, verified)
			f.sameAsStored(tc.name, c)
		}

		src.serve(t, a2atest.SignEd25519(t, priv, "k1", "", changed()))
		got := f.mustRefresh("geo", map[string]any{"keys": keys})
		if got.Outcome != "updated" || got.Card.Name != "Someone Else" || got.Card.Revision != 7 {
			t.Errorf("signed with the key: %+v %q at revision %d", got.RefreshOutcome, got.Card.Name, got.Card.Revision)
		}
		wantImport(t, "signed with the key", got.Card, verified)
	})
}

// TestA2ARefreshInvalidSignature: a card whose signature was never verified is refused when a key
// rejects the fetched card's signature, unless the request says allowInvalidSignature; then it is
// applied, its import record saying "invalid" with the key that rejected it.
func TestA2ARefreshInvalidSignature(t *testing.T) {
	forEachDialect(t, func(t *testing.T, f *fixture) {
		f.allowLoopback()
		src := newCardSource(t)
		priv, keys := edKey(t)
		src.serve(t, a2atest.SignEd25519(t, priv, "k1", "", a2atest.SampleV1(t)))
		f.mustImport(map[string]any{"agentId": "geo", "url": src.cardURL()})
		tampered := a2atest.SignEd25519(t, priv, "k1", "", a2atest.SampleV1(t))
		tampered["name"] = "Someone Else"
		src.serve(t, tampered)

		got := f.mustRefresh("geo", map[string]any{"keys": keys})
		refused := cards.RefreshOutcome{Outcome: "refused", Reason: "allowInvalidSignature"}
		if !sameOutcome(got.RefreshOutcome, refused) || got.Card.Name != "GeoSpatial Route Planner Agent" || got.Card.Revision != 2 {
			t.Errorf("not allowed: %+v %q at revision %d", got.RefreshOutcome, got.Card.Name, got.Card.Revision)
		}
		wantSource(t, "not allowed", got.Card, cards.Source{URL: src.cardURL(), RefreshedAt: got.Card.Source.RefreshedAt, Refresh: &refused})
		wantImport(t, "not allowed", got.Card, cards.ImportRecord{Format: "1.0", URL: src.cardURL(),
			Signature: cards.SignatureCheck{Status: "unverified", Reason: "no key"}})
		f.sameAsStored("not allowed", got.Card)

		got = f.mustRefresh("geo", map[string]any{"keys": keys, "allowInvalidSignature": true})
		if got.Outcome != "updated" || got.Card.Name != "Someone Else" || got.Card.Revision != 3 {
			t.Errorf("allowed: %+v %q at revision %d", got.RefreshOutcome, got.Card.Name, got.Card.Revision)
		}
		wantSource(t, "allowed", got.Card, cards.Source{URL: src.cardURL(), RefreshedAt: got.Card.Source.RefreshedAt,
			Refresh: &cards.RefreshOutcome{Outcome: "updated"}})
		wantImport(t, "allowed", got.Card, cards.ImportRecord{Format: "1.0", URL: src.cardURL(),
			Signature: cards.SignatureCheck{Status: "invalid", Reason: "does not match", KeyID: "k1", KeySource: "request"}})
		f.sameAsStored("allowed", got.Card)
	})
}
