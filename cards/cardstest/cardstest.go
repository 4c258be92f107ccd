// Package cardstest holds cards for tests: as a store hands them back, and generated corpora.
package cardstest

import (
	"testing"

	"github.com/agentcards/agentcards/bench/cardgen"
	"github.com/agentcards/agentcards/cards"
)

// Stored returns c as a store hands it back: its document read again, which normalizes it, with
// the server-owned fields it had.
func Stored(c cards.Card) cards.Card {
	doc, err := cards.MarshalDocument(c)
	if err != nil {
		panic(err)
	}
	back, err := cards.UnmarshalDocument(doc)
	if err != nil {
		panic(err)
	}
	back.ID, back.Revision, back.CreatedAt, back.UpdatedAt = c.ID, c.Revision, c.CreatedAt, c.UpdatedAt
	return back
}

// Cards returns n generated cards (bench/cardgen's documents of seed), as a store hands them back.
func Cards(tb testing.TB, seed uint64, n int) []cards.Card {
	tb.Helper()
	out := make([]cards.Card, n)
	for i, doc := range cardgen.Documents(seed, n) {
		c, err := cards.Decode(doc)
		if err != nil {
			tb.Fatal(err)
		}
		out[i] = Stored(c)
	}
	return out
}
