package a2a_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/a2a/a2atest"
	"github.com/agentcards/agentcards/tenants"
)

// Writes that land while a refresh runs (docs/lifecycle.md, Refresh from the source: "a write
// that lands during the fetch is kept, and the fetched card weighed against it"), through
// a2a.Service.Refresh.

// TestA2ARefreshRacingWrites: a write during the fetch is kept, and the fetched card weighed
// against the card as written; a delete during the fetch is fault.NotFound, and the card stays
// deleted; a card deleted and registered again without a source during the fetch is fault.Stale,
// and the new card is left as it was written.
func TestA2ARefreshRacingWrites(t *testing.T) {
	forEachDialect(t, func(t *testing.T, f *fixture) {
		f.allowLoopback()
		src := newCardSource(t)
		src.serve(t, a2atest.SampleV1(t))
		f.mustImport(map[string]any{"agentId": "geo", "url": src.cardURL()})

		src.whileFetching(func() {
			if _, err := f.cards.Patch(alice, acme, "geo", []byte(`{"metadata": {"team": "maps"}}`), cards.Precondition{}); err != nil {
				t.Errorf("patch during the fetch: %v", err)
			}
		})
		got := f.mustRefresh("geo", nil)
		if !reflect.DeepEqual(metadataOf(t, got.Card), map[string]any{"team": "maps"}) || got.Outcome != "unchanged" || got.Card.Revision != 3 {
			t.Errorf("patched during the fetch: %+v at revision %d, metadata %s", got.RefreshOutcome, got.Card.Revision, got.Card.Metadata)
		}
		f.sameAsStored("patched during the fetch", got.Card)

		src.whileFetching(func() {
			if err := f.cards.Delete(alice, acme, "geo", cards.Precondition{}); err != nil {
				t.Errorf("delete during the fetch: %v", err)
			}
		})
		_, err := f.refresh("geo", nil)
		wantKind(t, "deleted during the fetch", err, fault.NotFound)
		f.absent("geo")

		f.mustImport(map[string]any{"agentId": "geo", "url": src.cardURL()})
		var plain cards.Card
		src.whileFetching(func() {
			if err := f.cards.Delete(alice, acme, "geo", cards.Precondition{}); err != nil {
				t.Errorf("delete during the fetch: %v", err)
			}
			plain = f.put("geo", map[string]any{"name": "Plain", "endpoint": "https://plain.example/a2a"})
		})
		_, err = f.refresh("geo", nil)
		wantKind(t, "registered again during the fetch", err, fault.Stale)
		if c := f.card("geo"); c.Name != "Plain" || c.Source != nil || c.Revision != plain.Revision {
			t.Errorf("registered again during the fetch: the card is %s, want the plain one at revision %d", jsonOf(t, c), plain.Revision)
		}
	})
}

// metadataOf is c's metadata as a JSON object.
func metadataOf(t *testing.T, c cards.Card) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(c.Metadata, &m); err != nil {
		t.Errorf("metadata %s: %v", c.Metadata, err)
	}
	return m
}

// racingStore is the real store, read by the refresh, with another writer that changes the card
// right after each of its first n reads: each such read is behind the card by the time the
// refresh writes.
type racingStore struct {
	cards.Store
	f  *fixture
	mu sync.Mutex
	n  int
}

func (s *racingStore) Get(ctx context.Context, tenant tenants.ID, agentID string) (cards.Card, error) {
	c, err := s.Store.Get(ctx, tenant, agentID)
	s.mu.Lock()
	s.n--
	n := s.n
	s.mu.Unlock()
	if err == nil && n >= 0 {
		patch := fmt.Sprintf(`{"metadata": {"left": %d}}`, n)
		if _, err := s.f.cards.Patch(alice, tenant, agentID, []byte(patch), cards.Precondition{}); err != nil {
			s.f.t.Errorf("the other writer: %v", err)
		}
	}
	return c, err
}

// TestA2ARefreshGivesUpAfterEightWrites: a refresh weighs its fetch against the card written
// meanwhile up to 8 times (docs/lifecycle.md: "other writers changed it 8 times in a row"): 7
// writes in a row, and the 8th attempt is applied, the writes kept; 8, and it is fault.Stale,
// recording nothing.
func TestA2ARefreshGivesUpAfterEightWrites(t *testing.T) {
	f := newFixture(t, "sqlite")
	f.allowLoopback()
	src := newCardSource(t)
	src.serve(t, a2atest.SampleV1(t))
	store := f.a2a.Store
	for _, writes := range []int{7, 8} {
		id := fmt.Sprintf("geo%d", writes)
		f.mustImport(map[string]any{"agentId": id, "url": src.cardURL()})
		f.a2a.Store = &racingStore{Store: store, f: f, n: writes}
		got, err := f.refresh(id, nil)
		f.a2a.Store = store
		c := f.card(id)
		if writes == 8 {
			wantKind(t, "8 writes", err, fault.Stale)
			f.unrefreshed("8 writes", id, 9)
			continue
		}
		if err != nil || got.Outcome != "unchanged" || got.Card.Revision != 9 ||
			!reflect.DeepEqual(metadataOf(t, c), map[string]any{"left": 0.0}) {
			t.Errorf("7 writes: %v %+v at revision %d, stored metadata %s", err, got.RefreshOutcome, got.Card.Revision, c.Metadata)
		}
		f.sameAsStored("7 writes", got.Card)
	}
}
