package search

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/cardstest"
)

// TestPublicPages pages through a tenant's public cards with and without an index, against
// answers written by hand: only public cards, in agentId order, and a next page only when
// another public card follows.
func TestPublicPages(t *testing.T) {
	store := &feedModel{cards: map[string]cards.Card{}}
	for id, vis := range map[string]cards.Visibility{
		"a": cards.VisibilityPublic, "b": cards.VisibilityPrivate, "c": cards.VisibilityPublic,
		"d": cards.VisibilityTenant, "e": cards.VisibilityPublic, "f": cards.VisibilityPrivate,
		"g": cards.VisibilityTenant,
	} {
		store.cards[id] = cardstest.Stored(cards.Card{AgentID: id, Name: "Agent " + id, Visibility: vis, ID: "id-" + id, Revision: 1})
	}
	cases := []struct {
		after string
		limit int
		want  string // the page's agentIds, then the agentId the next page starts after
	}{
		{"", 1, "[a] a"},
		{"", 2, "[a c] c"},
		{"c", 2, "[e] "},
		{"", 3, "[a c e] "}, // f and g follow, but neither is public
		{"b", 1, "[c] c"},   // after a card that is not public
		{"e", 5, "[] "},
		{"zz", 5, "[] "},
	}
	for _, withIndex := range []bool{false, true} {
		s := &Service{Store: store, Gate: admitAll{}, Authz: hiding(nil)}
		if withIndex {
			s.Index = NewIndex(store, store)
		}
		for _, c := range cases {
			page, err := s.Public(context.Background(), "t", c.after, c.limit)
			if err != nil {
				t.Fatalf("index %v, after %q, limit %d: %v", withIndex, c.after, c.limit, err)
			}
			ids := []string{}
			for _, card := range page.Cards {
				ids = append(ids, card.AgentID)
			}
			if got := fmt.Sprintf("%v %s", ids, page.Next); got != c.want {
				t.Errorf("index %v, after %q, limit %d: %q, want %q", withIndex, c.after, c.limit, got, c.want)
			}
		}
		for _, limit := range []int{0, MaxLimit + 1} {
			if _, err := s.Public(context.Background(), "t", "", limit); !errors.Is(err, cards.ErrInvalid) {
				t.Errorf("index %v, limit %d: %v, want ErrInvalid", withIndex, limit, err)
			}
		}
	}
}
