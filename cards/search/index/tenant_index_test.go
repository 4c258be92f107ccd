package index

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/agentcards/agentcards/bench/cardgen"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/cardstest"
)

// naiveSearch is the reference: evaluate every live card and page the result. It shares
// Plan.evaluate and Plan.Page with the scan (search.index: none), so it checks the index against
// those, not those against docs/search.md; TestSearchHandWrittenAnswers does that.
func naiveSearch(live map[string]Doc, p *Plan, readable func(string) bool) ([]Candidate, int, *Position) {
	var all []Candidate
	for _, d := range live {
		if readable != nil && !readable(d.agentID) {
			continue
		}
		if m, ok := p.evaluate(d); ok {
			all = append(all, m)
		}
	}
	page, next := p.Page(all)
	return page, len(all), next
}

// TestIndexAgreesWithScan checks the index against the reference semantics on thousands of
// generated cards after updates and enough deletions to force a compaction, for random queries
// of every kind, page after page.
func TestIndexAgreesWithScan(t *testing.T) {
	// Split scoring in two even on this small index, so both halves' code is checked.
	defer func(w int) { parallelWords = w }(parallelWords)
	parallelWords = 8
	r := rand.New(rand.NewPCG(7, 7))
	base := cardstest.Cards(t, 1, 3000)
	variants := cardstest.Cards(t, 2, 600)
	x := New()
	live := map[string]cards.Card{}
	for i, c := range base {
		// Some cards deprecated, some disabled, some as imported with a verified signature.
		switch i % 7 {
		case 1:
			c.Status = cards.StatusDeprecated
		case 2, 5:
			c.Status = cards.StatusDisabled
		}
		if i%3 == 0 {
			c.A2A = &cards.A2A{Import: &cards.ImportRecord{Signature: cards.SignatureCheck{Status: cards.SignatureVerified}}}
		}
		base[i] = c
		x.Upsert(c)
		live[c.AgentID] = c
	}
	// Replace 600 cards with other content under the same agentId, then delete 1500.
	for i, v := range variants {
		v.AgentID = base[i*5].AgentID
		x.Upsert(v)
		live[v.AgentID] = v
	}
	for _, i := range r.Perm(len(base))[:1500] {
		x.Remove(base[i].AgentID)
		delete(live, base[i].AgentID)
	}
	if dead := len(x.docs) - x.live; dead > x.live {
		t.Fatalf("no compaction happened: %d dead, %d live", dead, x.live)
	}
	if x.live != len(live) {
		t.Fatalf("index holds %d, want %d", x.live, len(live))
	}

	analyzed := map[string]Doc{}
	for id, c := range live {
		analyzed[id] = Analyze(c)
	}
	cardsLive := make([]cards.Card, 0, len(live))
	for _, c := range live {
		cardsLive = append(cardsLive, c)
	}
	slices.SortFunc(cardsLive, func(a, b cards.Card) int { return strings.Compare(a.AgentID, b.AgentID) })
	// Once with per-entry scoring only, once with every word's list kept as bitmaps, with cards
	// rewritten between queries so that bitmaps of an older index must not be used.
	for _, dense := range []bool{false, true} {
		t.Run(fmt.Sprintf("dense=%v", dense), func(t *testing.T) {
			defer func(n int) { denseEntries = n }(denseEntries)
			denseEntries = 1 << 30
			if dense {
				denseEntries = 1
			}
			checkQueries(t, r, x, analyzed, cardsLive, dense)
		})
	}
}

// checkQueries runs 400 random queries, three pages each, on x and on the reference semantics
// over analyzed. With rewrite, every 10th query first gives a card another card's content.
func checkQueries(t *testing.T, r *rand.Rand, x *Tenant, analyzed map[string]Doc, cardsLive []cards.Card, rewrite bool) {
	words := cardgen.Words()
	for i := 0; i < 400; i++ {
		if rewrite && i%10 == 0 {
			target, source := &cardsLive[r.IntN(len(cardsLive))], cardsLive[r.IntN(len(cardsLive))]
			c := source
			c.AgentID = target.AgentID
			x.Upsert(c)
			*target = c
			analyzed[c.AgentID] = Analyze(c)
		}
		some := cardsLive[r.IntN(len(cardsLive))]
		var q Query
		if r.IntN(3) == 0 {
			q.Protocols = []string{some.Protocols[0]}
		}
		if r.IntN(3) == 0 {
			q.Tags = []string{some.Tags[r.IntN(len(some.Tags))]}
		}
		if r.IntN(3) == 0 {
			q.Capabilities = []string{some.Capabilities[r.IntN(len(some.Capabilities))].Name}
		}
		if r.IntN(4) == 0 {
			name := strings.ToLower(some.Name)
			start := r.IntN(len(name) - 2)
			q.Name = name[start : start+1+r.IntN(min(6, len(name)-start))]
		}
		if r.IntN(2) == 0 {
			var qw []string
			for range 1 + r.IntN(3) {
				w := words[r.IntN(len(words))]
				if r.IntN(4) == 0 && len(w) > 4 {
					w = w[:3+r.IntN(len(w)-3)] // a word being typed
				}
				qw = append(qw, w)
			}
			q.Q = strings.Join(qw, " ")
		}
		switch r.IntN(6) {
		case 0:
			q.Status = []string{"disabled"}
		case 1:
			q.Status = []string{"active", "disabled"}
		case 2:
			q.Status = []string{"deprecated"}
		}
		if r.IntN(4) == 0 {
			q.Verified = new(r.IntN(2) == 0)
		}
		q.Limit = new(1 + r.IntN(30))
		var readable func(string) bool
		if r.IntN(5) == 0 {
			readable = func(id string) bool { return id[len(id)-1]%3 != 0 }
		}
		for pageNo := 0; pageNo < 3; pageNo++ {
			p, err := q.Compile()
			if err != nil {
				t.Fatalf("%+v: %v", q, err)
			}
			gotPage, gotTotal, gotNext := x.Search(&p, readable, nil)
			wantPage, wantTotal, wantNext := naiveSearch(analyzed, &p, readable)
			if fmt.Sprint(gotPage) != fmt.Sprint(wantPage) || gotTotal != wantTotal || fmt.Sprint(gotNext) != fmt.Sprint(wantNext) {
				t.Fatalf("query %+v page %d:\nindex %v total %d next %v\nscan  %v total %d next %v",
					q, pageNo, gotPage, gotTotal, gotNext, wantPage, wantTotal, wantNext)
			}
			if gotNext == nil {
				break
			}
			q.Cursor = encodePosition(*gotNext)
		}
	}
}
