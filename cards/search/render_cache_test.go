package search

import (
	"context"
	"testing"

	"github.com/agentcards/agentcards/cards"
)

// TestRenderCacheForgetsWrittenCards: the encoded cards a search cached go when their cards are
// replaced or deleted, so ids that churn do not pile up in memory until the cache's bound.
func TestRenderCacheForgetsWrittenCards(t *testing.T) {
	ctx := context.Background()
	store := &feedModel{cards: map[string]cards.Card{}}
	for _, id := range []string{"a", "b", "c"} {
		store.cards[id] = stored(cards.Card{AgentID: id, Name: "Agent " + id, ID: "id-" + id, Revision: 1})
	}
	ix := NewIndex(store, store)
	s := &Service{Store: store, Gate: admitAll{}, Authz: hiding(nil), Index: ix}
	search := func() {
		t.Helper()
		if _, err := s.Search(caller, "t", Query{}); err != nil {
			t.Fatal(err)
		}
	}
	search()
	e, err := ix.loaded(ctx, "t", true)
	if err != nil || e == nil {
		t.Fatalf("the index is not loaded: %v", err)
	}
	if n, _ := e.cache.size(); n != 3 {
		t.Fatalf("%d cards cached after the search, want 3", n)
	}
	store.mu.Lock()
	delete(store.cards, "b")
	store.cards["a"] = stored(cards.Card{AgentID: "a", Name: "Agent a, again", ID: "id-a", Revision: 2})
	store.mu.Unlock()
	if err := ix.Written(ctx, "t", "a", "b"); err != nil {
		t.Fatal(err)
	}
	if n, bytes := e.cache.size(); n != 1 || e.cache.get("c", "id-c", 1) == nil || bytes != len(e.cache.get("c", "id-c", 1).json) {
		t.Fatalf("after a replace and a delete: %d cards, %d bytes cached; want only c", n, bytes)
	}
	search()
	if n, _ := e.cache.size(); n != 2 || e.cache.get("a", "id-a", 2) == nil {
		t.Fatalf("after searching again: %d cards cached, want a at revision 2 and c", n)
	}
}
