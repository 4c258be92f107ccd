package search

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/search/searchtest"
)

// hiding is an Authorizer whose read filter hides some cards.
type hiding []string

func (h hiding) Check(context.Context, string, string, string) error { return nil }

func (h hiding) ReadFilter(context.Context, string) (func(string) bool, error) {
	if len(h) == 0 {
		return nil, nil
	}
	return func(id string) bool { return !slices.Contains(h, id) }, nil
}

// serviceSearch answers through Service.Search, with or without the index.
func serviceSearch(t *testing.T, withIndex bool) func(q Query, hide []string) searchtest.Answer {
	store := &feedModel{cards: map[string]cards.Card{}}
	for _, c := range searchtest.HandCorpus() {
		store.cards[c.AgentID] = c
	}
	var ix *Index
	if withIndex {
		ix = NewIndex(store, store)
	}
	return func(q Query, hide []string) searchtest.Answer {
		s := &Service{Store: store, Gate: admitAll{}, Index: ix, Authz: hiding(hide)}
		res, err := s.Search(caller, "t", q)
		if err != nil {
			t.Fatalf("%+v: %v", q, err)
		}
		a := searchtest.Answer{IDs: []string{}, Total: res.Total, Next: res.NextCursor, Hits: map[string]string{}}
		for _, h := range res.Items {
			a.IDs = append(a.IDs, h.Card.AgentID)
			if h.Score != nil || h.MatchedCapabilities != nil {
				a.Scored++
			}
			if h.Score != nil {
				caps := h.MatchedCapabilities
				if caps == nil {
					caps = []string{}
				}
				a.Hits[h.Card.AgentID] = fmt.Sprintf("%.3g %v", *h.Score, caps)
			}
		}
		return a
	}
}

// TestSearchHandWrittenAnswers runs searchtest.Cases through Service.Search, without an index
// (search.index: none) and with one; the index package runs them on its other code paths. The
// answers do not come from the code under test.
func TestSearchHandWrittenAnswers(t *testing.T) {
	for _, withIndex := range []bool{false, true} {
		t.Run(map[bool]string{false: "scan", true: "index"}[withIndex], func(t *testing.T) {
			search := serviceSearch(t, withIndex)
			for _, c := range searchtest.Cases() {
				searchtest.CheckCase(t, c, search)
			}
		})
	}
}
