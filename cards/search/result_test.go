package search

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/cardstest"
)

// TestAppendCardJSON: a hit's card written from its cached encoding, with the liveness put in
// as its last member, is the JSON value encoding/json gives the card, for every kind of
// liveness and for none.
func TestAppendCardJSON(t *testing.T) {
	c := cardstest.Stored(cards.Card{AgentID: "a", Name: "Agent a", Description: "Does \"things\" <fast>.", ID: "id-a", Revision: 3,
		Capabilities: []cards.Capability{{Name: "review", Tags: []string{"code"}}}})
	seen := time.Date(2026, 12, 5, 10, 0, 0, 123456789, time.UTC)
	for _, l := range []*cards.Liveness{
		nil,
		{State: cards.Unknown},
		{State: cards.Offline},
		{State: cards.Online, LastSeenAt: &seen},
		{State: cards.Offline, LastSeenAt: &seen, Probe: &cards.Probe{}},
	} {
		r, err := render(c)
		if err != nil {
			t.Fatal(err)
		}
		h := Hit{Card: c, raw: r.json}
		h.Card.Liveness = l
		want, err := json.Marshal(h.Card)
		if err != nil {
			t.Fatal(err)
		}
		got, err := h.AppendCardJSON([]byte("prefix"))
		if err != nil || string(got[:6]) != "prefix" || !sameJSON(t, got[6:], want) {
			t.Errorf("liveness %+v: %s, %v\nwant prefix%s", l, got, err, want)
		}
		uncached := Hit{Card: h.Card}
		if got, err := uncached.AppendCardJSON(nil); err != nil || string(got) != string(want) {
			t.Errorf("liveness %+v, not cached: %s, %v", l, got, err)
		}
	}
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(x, y)
}
