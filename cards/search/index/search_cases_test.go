package index_test

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/search/index"
	"github.com/agentcards/agentcards/cards/search/searchtest"
)

// churnedIndexSearch answers from an index whose documents are spread over several bitmap
// words by removed ones (no compaction), with every list dense enough for bitmaps and scoring
// split in two: the index's other code paths, on the same answers.
func churnedIndexSearch(t *testing.T) func(q index.Query, hide []string) searchtest.Answer {
	return churnedIndexSearchOf(t, false)
}

// churnedIndexSearchOf is churnedIndexSearch, from the index written out as a snapshot and read
// back if restored.
func churnedIndexSearchOf(t *testing.T, restored bool) func(q index.Query, hide []string) searchtest.Answer {
	x := index.New()
	corpus := searchtest.HandCorpus()
	for _, c := range corpus[:5] {
		x.Upsert(c)
	}
	for i := range 150 {
		x.Upsert(cards.Card{AgentID: fmt.Sprintf("filler-%03d", i), Name: "review alpha", Protocols: []string{"http"}, Tags: []string{"code"}})
	}
	for i := range 150 {
		x.Remove(fmt.Sprintf("filler-%03d", i))
	}
	for _, c := range corpus[5:] {
		x.Upsert(c)
	}
	x.Upsert(corpus[2]) // alpha again, now after everything else
	if words := (x.Documents() + 63) / 64; words < 3 || x.Live() != len(corpus) {
		t.Fatalf("setup: %d documents, %d live", x.Documents(), x.Live())
	}
	if restored {
		var b bytes.Buffer
		if err := x.EncodeTo(&b, "t"); err != nil {
			t.Fatal(err)
		}
		var err error
		if x, err = index.Decode(b.Bytes(), "t"); err != nil {
			t.Fatal(err)
		}
	}
	return func(q index.Query, hide []string) searchtest.Answer {
		p, err := q.Compile()
		if err != nil {
			t.Fatalf("%+v: %v", q, err)
		}
		page, total, next := x.Search(&p, hidden(hide), nil)
		a := searchtest.Answer{IDs: []string{}, Total: total}
		for _, c := range page {
			a.IDs = append(a.IDs, c.AgentID())
		}
		if next != nil {
			a.Next = next.Cursor()
		}
		return a
	}
}

// TestIndexHandWrittenAnswers runs searchtest.Cases on the index's other code paths than a
// search through the service takes (cards/search runs them there): bitmaps for every list and
// scoring split in two, and an index written out as a snapshot and read back.
func TestIndexHandWrittenAnswers(t *testing.T) {
	modes := []struct {
		name   string
		search func(t *testing.T) func(index.Query, []string) searchtest.Answer
		setup  func() (undo func())
	}{
		{name: "churned", search: churnedIndexSearch},
		{name: "churned-read-back", search: func(t *testing.T) func(index.Query, []string) searchtest.Answer { return churnedIndexSearchOf(t, true) }},
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			if m.setup != nil {
				defer m.setup()()
			}
			search := m.search(t)
			for _, c := range searchtest.Cases() {
				searchtest.CheckCase(t, c, search)
			}
		})
	}
}

// hidden is the read filter of a caller who may not read the cards of hide (nil: all).
func hidden(hide []string) func(string) bool {
	if len(hide) == 0 {
		return nil
	}
	return func(id string) bool { return !slices.Contains(hide, id) }
}
