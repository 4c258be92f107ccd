package search_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentcards/agentcards/authz/authztest"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/search"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/tenants"
)

// getCounting is the real card store, counting Get.
type getCounting struct {
	*storage.CardStore
	gets atomic.Int64
}

func (s *getCounting) Get(ctx context.Context, tenant tenants.ID, agentID string) (cards.Card, error) {
	s.gets.Add(1)
	return s.CardStore.Get(ctx, tenant, agentID)
}

// TestWritesGuessFromMemory: a replace or patch of a card the loaded index holds goes over the
// card memory holds, without reading the database; when memory is behind the database (another
// replica wrote since), the write still goes over the database's card: nothing the other wrote
// is lost, and preconditions are decided on the database's revision, never on memory's.
func TestWritesGuessFromMemory(t *testing.T) {
	for _, d := range storagetest.Dialects() {
		t.Run(d, func(t *testing.T) {
			g := newGuessFixture(t, d)
			g.writesOverMemory()
			g.memoryBehindTheDatabase()
			g.deletedElsewhere()
			g.patchValidOverTheDatabase()
			g.patchOfACardDeletedElsewhere()
		})
	}
}

// guessFixture is a replica whose writes guess from its loaded index (svc), over a store that
// counts its reads of a card, and another replica writing the same database (other), which this
// one's index never hears of.
type guessFixture struct {
	t     *testing.T
	ctx   context.Context
	real  *storage.CardStore
	store *getCounting
	svc   *cards.Service
	other *cards.Service
}

// newGuessFixture makes tenant bench on a fresh database of dialect d and loads its index.
func newGuessFixture(t *testing.T, d string) *guessFixture {
	ctx := benchCaller
	db := storagetest.Open(t, d)
	if err := storage.NewTenantStore(db).Create(ctx, tenants.Tenant{ID: "bench", Name: "Bench", Status: tenants.StatusActive,
		CreatedAt: time.Now(), UpdatedAt: time.Now()}, nil); err != nil {
		t.Fatal(err)
	}
	real := storage.NewCardStore(db)
	store := &getCounting{CardStore: real}
	gate := &tenants.Service{Store: storage.NewTenantStore(db)}
	ix := search.NewIndex(real, real)                         // no follower: it learns only this replica's writes
	ix.Copy = &search.OutageCopy{Store: real, Bytes: 1 << 20} // as the server keeps (search.outageCopyBytes)
	t.Cleanup(ix.Close)
	svc := &cards.Service{Store: store, Gate: gate, Authz: authztest.AllowAll{}, Index: ix, Memory: ix}
	other := &cards.Service{Store: real, Gate: gate, Authz: authztest.AllowAll{}} // another replica
	s := &search.Service{Store: real, Gate: gate, Authz: authztest.AllowAll{}, Index: ix}
	if _, err := s.Search(ctx, "bench", search.Query{}); err != nil { // loads the index
		t.Fatal(err)
	}
	return &guessFixture{t: t, ctx: ctx, real: real, store: store, svc: svc, other: other}
}

// register registers the card of agent id through svc.
func (g *guessFixture) register(id string) {
	g.t.Helper()
	if _, err := g.svc.Register(g.ctx, "bench", fmt.Appendf(nil, `{"agentId": %q, "name": "Agent", "protocols": ["a2a"]}`, id)); err != nil {
		g.t.Fatal(err)
	}
}

// gets checks that the store read a card want times since the last check, and starts counting
// anew.
func (g *guessFixture) gets(what string, want int64) {
	g.t.Helper()
	if got := g.store.gets.Swap(0); got != want {
		g.t.Errorf("%s: %d reads of the card from the database, want %d", what, got, want)
	}
}

// writesOverMemory checks that a patch and a replace of card a, which memory holds, read no card
// from the database.
func (g *guessFixture) writesOverMemory() {
	t, ctx, svc := g.t, g.ctx, g.svc
	g.register("a")
	g.store.gets.Store(0)
	c, err := svc.Patch(ctx, "bench", "a", []byte(`{"description": "one"}`), cards.Precondition{IfMatch: []int64{1}})
	if err != nil || c.Revision != 2 {
		t.Fatalf("patch: %+v, %v", c, err)
	}
	g.gets("a patch of a card memory holds", 0)
	c, _, err = svc.Put(ctx, "bench", "a", []byte(`{"name": "Agent", "protocols": ["a2a"], "description": "two"}`), cards.Precondition{})
	if err != nil || c.Revision != 3 {
		t.Fatalf("put: %+v, %v", c, err)
	}
	g.gets("a replace of a card memory holds", 0)
}

// memoryBehindTheDatabase checks, with card a written by the other replica after memory's
// revision 3, that writes go over the database's card and decide If-Match on its revision.
func (g *guessFixture) memoryBehindTheDatabase() {
	t, ctx, svc, other := g.t, g.ctx, g.svc, g.other
	// Another replica writes: memory holds revision 3, the database 4.
	if _, err := other.Patch(ctx, "bench", "a", []byte(`{"tags": ["other"]}`), cards.Precondition{}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Patch(ctx, "bench", "a", []byte(`{"description": "stale"}`), cards.Precondition{IfMatch: []int64{3}}); !errors.Is(err, cards.ErrStale) {
		t.Fatalf("If-Match the revision memory holds, not the database's: %v, want stale", err)
	}
	c, err := svc.Patch(ctx, "bench", "a", []byte(`{"description": "three"}`), cards.Precondition{IfMatch: []int64{4}})
	if err != nil || c.Revision != 5 || c.Description != "three" || !slices.Equal(c.Tags, []string{"other"}) {
		t.Fatalf("If-Match the database's revision: %+v, %v; want revision 5 with the other replica's tags", c, err)
	}
	got, err := g.real.Get(ctx, "bench", "a")
	if err != nil || got.Revision != 5 || !slices.Equal(got.Tags, []string{"other"}) {
		t.Fatalf("stored: %+v, %v", got, err)
	}
	if _, err := other.Patch(ctx, "bench", "a", []byte(`{"version": "9"}`), cards.Precondition{}); err != nil {
		t.Fatal(err)
	}
	c, err = svc.Patch(ctx, "bench", "a", []byte(`{"description": "four"}`), cards.Precondition{})
	if err != nil || c.Revision != 7 || c.Version != "9" || c.Description != "four" {
		t.Fatalf("a patch over a guess behind the database: %+v, %v; want revision 7 with the other replica's version", c, err)
	}
	if _, _, err := other.Put(ctx, "bench", "a", []byte(`{"name": "Agent", "protocols": ["a2a"], "description": "five"}`), cards.Precondition{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := svc.Put(ctx, "bench", "a", []byte(`{"name": "Agent", "protocols": ["a2a"]}`), cards.Precondition{IfMatch: []int64{7}}); !errors.Is(err, cards.ErrStale) {
		t.Fatalf("a replace If-Match the revision memory holds: %v, want stale", err)
	}
}

// deletedElsewhere checks cards b and c, deleted by the other replica: a replace over memory's
// card creates it anew; one that asks for a new card is refused only if the database has the
// card.
func (g *guessFixture) deletedElsewhere() {
	t, ctx, svc, other := g.t, g.ctx, g.svc, g.other
	g.register("b")
	if err := other.Delete(ctx, "bench", "b", cards.Precondition{}); err != nil {
		t.Fatal(err)
	}
	_, created, err := svc.Put(ctx, "bench", "b", []byte(`{"name": "Agent b", "protocols": ["a2a"]}`), cards.Precondition{})
	if err != nil || !created {
		t.Fatalf("a replace of a card deleted elsewhere: created %v, %v", created, err)
	}
	if _, _, err := svc.Put(ctx, "bench", "b", []byte(`{"name": "Agent b", "protocols": ["a2a"]}`), cards.Precondition{IfNoneMatchAny: true}); !errors.Is(err, cards.ErrStale) {
		t.Fatalf("If-None-Match * on a card that exists: %v, want stale", err)
	}
	g.register("c")
	if err := other.Delete(ctx, "bench", "c", cards.Precondition{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := svc.Put(ctx, "bench", "c", []byte(`{"name": "Agent c", "protocols": ["a2a"]}`), cards.Precondition{IfNoneMatchAny: true}); err != nil {
		t.Fatalf("If-None-Match * on a card deleted elsewhere that memory still holds: %v", err)
	}
}

// patchValidOverTheDatabase checks that a patch that is valid only over the database's card of d
// (memory's lacks the type it names scopes for) is decided there.
func (g *guessFixture) patchValidOverTheDatabase() {
	t, ctx := g.t, g.ctx
	g.register("d")
	if _, err := g.other.Patch(ctx, "bench", "d", []byte(`{"authRequirements": {"type": "bearer"}}`), cards.Precondition{}); err != nil {
		t.Fatal(err)
	}
	if c, err := g.svc.Patch(ctx, "bench", "d", []byte(`{"authRequirements": {"scopes": ["x"]}}`), cards.Precondition{}); err != nil || c.Revision != 3 {
		t.Fatalf("a patch valid over the database's card, not memory's: %+v, %v", c, err)
	}
}

// patchOfACardDeletedElsewhere checks that a patch of card a, written and then deleted by the
// other replica, finds no card.
func (g *guessFixture) patchOfACardDeletedElsewhere() {
	t, ctx, other := g.t, g.ctx, g.other
	if _, err := other.Patch(ctx, "bench", "a", []byte(`{"version": "10"}`), cards.Precondition{}); err != nil {
		t.Fatal(err)
	}
	if err := other.Delete(ctx, "bench", "a", cards.Precondition{}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.svc.Patch(ctx, "bench", "a", []byte(`{"description": "gone"}`), cards.Precondition{}); !errors.Is(err, cards.ErrNotFound) {
		t.Fatalf("a patch of a card deleted elsewhere: %v, want not found", err)
	}
}
