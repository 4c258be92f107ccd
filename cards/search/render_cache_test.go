package search

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/cardstest"
)

// TestRenderCacheForgetsWrittenCards: the encoded cards a search cached go when their cards are
// replaced or deleted, so ids that churn do not pile up in memory until the cache's bound.
func TestRenderCacheForgetsWrittenCards(t *testing.T) {
	ctx := context.Background()
	store := &feedModel{cards: map[string]cards.Card{}}
	for _, id := range []string{"a", "b", "c"} {
		store.cards[id] = cardstest.Stored(cards.Card{AgentID: id, Name: "Agent " + id, ID: "id-" + id, Revision: 1})
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
	store.cards["a"] = cardstest.Stored(cards.Card{AgentID: "a", Name: "Agent a, again", ID: "id-a", Revision: 2})
	store.mu.Unlock()
	if err := ix.Written(ctx, "t", "a", "b"); err != nil {
		t.Fatal(err)
	}
	if n, mem := e.cache.size(); n != 1 || e.cache.get("c", "id-c", 1) == nil || mem != e.cache.get("c", "id-c", 1).mem || e.cache.bytes != len(e.cache.get("c", "id-c", 1).json) {
		t.Fatalf("after a replace and a delete: %d cards, %d bytes of JSON and %d of memory cached; want only c", n, e.cache.bytes, mem)
	}
	search()
	if n, _ := e.cache.size(); n != 2 || e.cache.get("a", "id-a", 2) == nil {
		t.Fatalf("after searching again: %d cards cached, want a at revision 2 and c", n)
	}
}

// TestIndexRemembersCardsRead: a card read is kept at the revision the index holds, and answered
// from memory until a write of it; an older revision is not kept; nothing is for a tenant whose
// index is not loaded.
func TestIndexRemembersCardsRead(t *testing.T) {
	store := &feedModel{cards: map[string]cards.Card{}}
	a1 := cards.Card{AgentID: "a", Name: "Agent a", ID: "id-a", Revision: 1}
	store.cards["a"] = cardstest.Stored(a1)
	ix := NewIndex(store, store)
	ix.Keep("t", a1)
	if _, ok := ix.Remembered("t", "a"); ok {
		t.Fatal("a card is remembered for a tenant whose index is not loaded")
	}
	s := &Service{Store: store, Gate: admitAll{}, Authz: hiding(nil), Index: ix}
	if _, err := s.Search(caller, "t", Query{Q: "nothing"}); err != nil { // loads the index
		t.Fatal(err)
	}
	if _, ok := ix.Remembered("t", "a"); ok {
		t.Fatal("a card no search or read returned is remembered")
	}
	ix.Keep("t", cards.Card{AgentID: "a", Name: "Agent a, older", ID: "id-a", Revision: 0})
	if _, ok := ix.Remembered("t", "a"); ok {
		t.Fatal("a revision other than the index's was kept")
	}
	ix.Keep("t", a1)
	if c, ok := ix.Remembered("t", "a"); !ok || c.Name != "Agent a" || c.Revision != 1 {
		t.Fatalf("the card read: %+v, %v", c, ok)
	}
	store.mu.Lock()
	store.cards["a"] = cardstest.Stored(cards.Card{AgentID: "a", Name: "Agent a, again", ID: "id-a", Revision: 2})
	store.mu.Unlock()
	if err := ix.Written(context.Background(), "t", "a"); err != nil {
		t.Fatal(err)
	}
	if c, ok := ix.Remembered("t", "a"); ok {
		t.Fatalf("after a write the old card is remembered: %+v", c)
	}
}

// TestIndexCloseEndsBuilds: once the index is closed (the server stopping), a build ends at once
// with the cancellation instead of reading the tenant's cards.
func TestIndexCloseEndsBuilds(t *testing.T) {
	store := &feedModel{cards: map[string]cards.Card{"a": cardstest.Stored(cards.Card{AgentID: "a", Name: "Agent a", ID: "id-a", Revision: 1})}}
	ix := NewIndex(store, store)
	ix.Close()
	if _, err := ix.entry(context.Background(), "t"); !errors.Is(err, fault.Unavailable) {
		t.Fatalf("a build after Close: %v, want unavailable", err)
	}
	if e, _ := ix.loaded(context.Background(), "t", false); e != nil {
		t.Fatal("a canceled build left an index behind")
	}
}

// TestRenderCacheDistrust: the cards of agents whose write the index could not read back are
// cached no more until the index installs them again.
func TestRenderCacheDistrust(t *testing.T) {
	var rc renderCache
	r := &rendered{card: cards.Card{AgentID: "a", ID: "id-a", Revision: 1}, json: []byte(`{}`)}
	rc.put("a", r)
	rc.distrust([]string{"a"}, 5)
	if rc.get("a", "id-a", 1) != nil {
		t.Fatal("a distrusted card is still cached")
	}
	rc.put("a", r)
	if rc.get("a", "id-a", 1) != nil {
		t.Fatal("a distrusted card was cached again")
	}
	// Installed from a read that began before it was distrusted, or from a writer's own card:
	// still distrusted.
	for _, read := range []uint64{0, 3, 5} {
		rc.installed([]string{"a"}, read)
		rc.put("a", r)
		if rc.get("a", "id-a", 1) != nil {
			t.Fatalf("a card installed from read %d, before it was distrusted at 5, is cached", read)
		}
	}
	rc.installed([]string{"a"}, 6) // installed again from a later read
	rc.put("a", r)
	if rc.get("a", "id-a", 1) == nil {
		t.Fatal("a card installed again is not cached")
	}
}

// TestDeletedAgentsForgotten: under churn of agent ids (cards registered and deleted for good),
// what the index remembers of each deletion for writes under way is dropped once older than
// WriteBound, so it does not grow with every id ever deleted. A write that began before a
// deletion is still never installed as written: within the bound the deletion is remembered,
// past it the index cannot tell and reads the card again.
func TestDeletedAgentsForgotten(t *testing.T) {
	ctx := context.Background()
	store := &feedModel{cards: map[string]cards.Card{}}
	ix := NewIndex(store, store)
	ix.WriteBound = time.Minute
	now := time.Unix(1_000_000, 0)
	ix.clock = func() time.Time { return now }
	e, err := ix.entry(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	started := now.Add(-time.Second) // the writes began after the build
	churn := func(from, to int) {
		for i := from; i < to; i++ {
			id := fmt.Sprintf("agt-%05d", i)
			c := cardstest.Stored(cards.Card{AgentID: id, Name: "Churned " + id, ID: "id-" + id, Revision: 1})
			store.mu.Lock()
			store.cards[id] = c
			store.mu.Unlock()
			if err := ix.Wrote(ctx, "t", started, c); err != nil {
				t.Fatal(err)
			}
			store.mu.Lock()
			delete(store.cards, id)
			store.mu.Unlock()
			if err := ix.Written(ctx, "t", id); err != nil {
				t.Fatal(err)
			}
		}
	}
	e.builtAt = now.Add(-time.Hour)
	churn(0, 2000)
	beforeDeletions := now
	now = now.Add(2 * time.Minute)
	started = now.Add(-time.Second)
	churn(2000, 2010)
	e.syncMu.Lock()
	remembered, removals := len(e.applied), len(e.removals)
	e.syncMu.Unlock()
	if remembered != 10 || removals != 10 {
		t.Fatalf("after 2,010 ids deleted, the last 10 within the bound: %d remembered, %d removals listed", remembered, removals)
	}
	held := func(id string) bool {
		e.x.RLock()
		defer e.x.RUnlock()
		_, ok := e.x.Held(id)
		return ok
	}
	// Creates that began before the deletions and commit only now, of an agent whose deletion
	// is remembered and of one whose deletion was forgotten: neither is taken as written (the
	// store, read again, has no such card).
	for _, id := range []string{"agt-02005", "agt-00005"} {
		late := cardstest.Stored(cards.Card{AgentID: id, Name: "Late", ID: "id-late", Revision: 1})
		if err := ix.Wrote(ctx, "t", beforeDeletions.Add(-time.Second), late); err != nil {
			t.Fatal(err)
		}
		if held(id) {
			t.Fatalf("%s: a write older than the deletion was installed as written", id)
		}
	}
	// A create that began after them is installed.
	c := cardstest.Stored(cards.Card{AgentID: "agt-00005", Name: "Anew", ID: "id-anew", Revision: 1})
	store.mu.Lock()
	store.cards[c.AgentID] = c
	store.mu.Unlock()
	if err := ix.Wrote(ctx, "t", now, c); err != nil {
		t.Fatal(err)
	}
	if !held("agt-00005") {
		t.Fatal("a create after the deletions was not installed")
	}
}
