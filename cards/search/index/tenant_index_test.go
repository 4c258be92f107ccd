package index

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentcards/agentcards/bench/cardgen"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/cardstest"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/tenants/paging"
)

// naiveSearch is the reference: a Scan of every live card, as search.index: none reads them. It
// checks the index against the Scan, not either against docs/search.md;
// TestIndexHandWrittenAnswers does that.
// analyzed caches the analysis of the cards naiveSearch scans, by agent.
var analyzed = map[string]analyzedCard{}

type analyzedCard struct {
	Doc
	// what tells the card's versions apart: generated cards have no id or revision
	name, description string
}

func naiveSearch(live []cards.Card, p *Plan, readable func(string) bool) ([]Candidate, int, *Position) {
	s := p.Scan()
	for _, c := range live {
		d, ok := analyzed[c.AgentID]
		if !ok || d.name != c.Name || d.description != c.Description {
			d = analyzedCard{Analyze(c), c.Name, c.Description}
			analyzed[c.AgentID] = d
		}
		s.add(d.Doc, readable == nil || readable(c.AgentID))
	}
	return s.Page()
}

// TestIndexAgreesWithScan checks the index against the reference semantics on thousands of
// generated cards after updates and enough deletions to force a compaction, for random queries
// of every kind, page after page.
func TestIndexAgreesWithScan(t *testing.T) {
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

	cardsLive := make([]cards.Card, 0, len(live))
	for _, c := range live {
		cardsLive = append(cardsLive, c)
	}
	slices.SortFunc(cardsLive, func(a, b cards.Card) int { return strings.Compare(a.AgentID, b.AgentID) })
	// Once as loaded, once with cards rewritten between queries, so that the words' weights and
	// the average length move under the queries; and again ranked by two goroutines in small
	// chunks and blocks, as a large index is.
	for _, split := range []bool{false, true} {
		for _, rewrite := range []bool{false, true} {
			t.Run(fmt.Sprintf("split=%v/rewrite=%v", split, rewrite), func(t *testing.T) {
				if split {
					defer func(docs, block, chunk int, alternate bool) {
						parallelDocs, blockDocs, chunkBlocks, alternateChunks = docs, block, chunk, alternate
					}(parallelDocs, blockDocs, chunkBlocks, alternateChunks)
					// Once with the rankers taking every other chunk, once as they come.
					parallelDocs, blockDocs, chunkBlocks, alternateChunks = 500, 64+r.IntN(200), 1+r.IntN(3), !rewrite
				}
				checkQueries(t, r, x, cardsLive, rewrite)
			})
		}
	}
}

// checkQueries runs 400 random queries, three pages each, on x and on the reference semantics
// over cardsLive. With rewrite, every 10th query first gives a card another card's content.
func checkQueries(t *testing.T, r *rand.Rand, x *Tenant, cardsLive []cards.Card, rewrite bool) {
	words := cardgen.Words()
	for i := 0; i < 400; i++ {
		if rewrite && i%10 == 0 {
			target, source := &cardsLive[r.IntN(len(cardsLive))], cardsLive[r.IntN(len(cardsLive))]
			c := source
			c.AgentID = target.AgentID
			x.Upsert(c)
			*target = c
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
				if r.IntN(4) == 0 {
					// a capability's name being typed: a compound's words or more
					w = some.Capabilities[r.IntN(len(some.Capabilities))].Name
				}
				if r.IntN(4) == 0 && len(w) > 4 {
					w = w[:3+r.IntN(len(w)-3)] // a word being typed
				}
				qw = append(qw, w)
			}
			q.Q = strings.Join(qw, " ")
			if r.IntN(3) == 0 {
				q.Synonyms = randomSynonyms(r, words, qw)
			}
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
			wantPage, wantTotal, wantNext := naiveSearch(cardsLive, &p, readable)
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

// randomSynonyms makes synonym sets for the query's words qw from the generated words: for some of
// them, a set of the word, other words and a phrase of two.
func randomSynonyms(r *rand.Rand, words, qw []string) []tenants.SynonymSet {
	var sets []tenants.SynonymSet
	for i, w := range qw {
		if r.IntN(2) == 0 {
			continue
		}
		set := tenants.SynonymSet{ID: fmt.Sprint("s", i), Words: []string{w}}
		for range 1 + r.IntN(3) {
			set.Words = append(set.Words, words[r.IntN(len(words))])
		}
		set.Words = append(set.Words, words[r.IntN(len(words))]+" "+words[r.IntN(len(words))])
		sets = append(sets, set)
	}
	return sets
}

// TestRankingBoundsExact: a ranking that passes over the documents a block's bounds say cannot
// reach the page answers as the scan does, on cards of a few words, rare to common, whose counts
// vary widely and whose lengths vary too, so that many matches lacking a word score close to the
// page's worst.
// Small blocks and chunks make most blocks ranked in two passes.
func TestRankingBoundsExact(t *testing.T) {
	defer func(docs, block, chunk int, alternate bool) {
		parallelDocs, blockDocs, chunkBlocks, alternateChunks = docs, block, chunk, alternate
	}(parallelDocs, blockDocs, chunkBlocks, alternateChunks)
	defer func(c, d float64) { maxCandidateShare, minDenseShare = c, d }(maxCandidateShare, minDenseShare)
	r := rand.New(rand.NewPCG(11, 12))
	// Words rare to common, so that a match of a rare word alone can outrank one of common
	// words together.
	words := []string{"alpha", "bravo", "charlie", "delta", "echo"}
	shares := []float64{0.03, 0.1, 0.3, 0.6, 0.9}
	for round := range 6 {
		parallelDocs, blockDocs, chunkBlocks = 200+r.IntN(400), 64+r.IntN(300), 1+r.IntN(3)
		// Even rounds: the rankers take every other chunk (see alternateChunks).
		alternateChunks = round%2 == 0
		// Rounds 4 and 5 go back to one pass for a few blocks after each block ranked in two
		// (maxCandidateShare), so that the two kinds of block alternate.
		maxCandidateShare, minDenseShare = 0.3, 0.6
		if round >= 4 {
			maxCandidateShare, minDenseShare = -1, -1
		}
		x := New()
		var live []cards.Card
		for i := range 600 + r.IntN(600) {
			var text []string
			for k, w := range words {
				if r.Float64() >= shares[k] {
					continue
				}
				for range 1 + r.IntN(1+r.IntN(12)) {
					text = append(text, w)
				}
			}
			for range 8 + r.IntN(50) {
				text = append(text, fmt.Sprint("filler", r.IntN(400)))
			}
			r.Shuffle(len(text), func(a, b int) { text[a], text[b] = text[b], text[a] })
			c := cards.Card{AgentID: fmt.Sprintf("agent-%05d", i), Name: fmt.Sprint("card ", i), Description: strings.Join(text, " "),
				ID: fmt.Sprint("id-", i), Revision: 1, Status: cards.StatusActive}
			if r.IntN(10) == 0 {
				c.Status = cards.StatusDisabled
			}
			x.Upsert(c)
			live = append(live, c)
		}
		slices.SortFunc(live, func(a, b cards.Card) int { return strings.Compare(a.AgentID, b.AgentID) })
		for range 100 {
			var qw []string
			for range 2 + r.IntN(3) {
				qw = append(qw, words[r.IntN(len(words))])
			}
			if r.IntN(3) == 0 {
				last := qw[len(qw)-1]
				qw[len(qw)-1] = last[:3+r.IntN(len(last)-2)] // a word being typed
			}
			q := Query{Q: strings.Join(qw, " ")}
			q.Limit = new(1 + r.IntN(8))
			var readable func(string) bool
			if r.IntN(4) == 0 {
				readable = func(id string) bool { return id[len(id)-1]%3 != 0 }
			}
			for pageNo := range 3 {
				p, err := q.Compile()
				if err != nil {
					t.Fatal(err)
				}
				gotPage, gotTotal, gotNext := x.Search(&p, readable, nil)
				wantPage, wantTotal, wantNext := naiveSearch(live, &p, readable)
				if fmt.Sprint(gotPage) != fmt.Sprint(wantPage) || gotTotal != wantTotal || fmt.Sprint(gotNext) != fmt.Sprint(wantNext) {
					t.Fatalf("round %d, q %q page %d:\nindex %v total %d\nscan  %v total %d", round, q.Q, pageNo, gotPage, gotTotal, wantPage, wantTotal)
				}
				if gotNext == nil {
					break
				}
				q.Cursor = encodePosition(*gotNext)
			}
		}
	}
}

// TestRequiredBoundsNotCancelled: a term is not required when a document lacking it can tie the
// page's worst, even when its own bound is so much larger than the others that subtracting it
// from the sum of all would lose their digits (a word nearly every card holds weighs almost
// nothing beside a rare one).
func TestRequiredBoundsNotCancelled(t *testing.T) {
	for _, ubs := range [][]float64{{12, 1e-7}, {1e-7, 12}, {9.7, 3.6347187891039754e-08, 2e-9}, {0.3, 0.2, 0.1}} {
		for i := range ubs {
			// A document lacking term i that scores the others' bounds, worst on the page.
			worst := 0.0
			for j, ub := range ubs {
				if j != i {
					worst += ub
				}
			}
			r := ranking{below: worst * (1 - 1e-9)}
			if r.needs(ubs, i) {
				t.Errorf("bounds %v: term %d required, though a document without it can score %v", ubs, i, worst)
			}
		}
	}
}

// TestSearchAfterPanic: a search whose read check panics half way through its ranking (its
// working memory dirty), on either of the two goroutines that share it, panics on the caller's
// goroutine and leaves nothing behind for the searches after it.
func TestSearchAfterPanic(t *testing.T) {
	defer func(docs, block int, alternate, await bool) {
		parallelDocs, blockDocs, alternateChunks, awaitHelper = docs, block, alternate, await
	}(parallelDocs, blockDocs, alternateChunks, awaitHelper)
	parallelDocs, blockDocs, awaitHelper = 1000, 256, true
	all := cardstest.Cards(t, 17, 3000)
	x := New()
	x.Load(all)
	words := cardgen.Words()
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 40 {
		// Every other search ranks its two halves one after the other on the caller's goroutine,
		// the others on two goroutines, both ranking.
		alternateChunks = i%2 == 0
		q := Query{Q: words[r.IntN(len(words))] + " " + words[r.IntN(len(words))], Page: paging.Page{Limit: new(10)}}
		p, err := q.Compile()
		if err != nil {
			t.Fatal(err)
		}
		var calls atomic.Int32
		stop := int32(1 + r.IntN(500))
		panicky := func(string) bool {
			if calls.Add(1) == stop {
				panic("read check failed")
			}
			return true
		}
		func() {
			defer func() {
				if v := recover(); v != "read check failed" {
					t.Fatalf("query %d: recovered %v", i, v)
				}
			}()
			x.Search(&p, panicky, nil)
		}()
		got, gotTotal, _ := x.Search(&p, nil, nil)
		want, wantTotal, _ := naiveSearch(all, &p, nil)
		if fmt.Sprint(got) != fmt.Sprint(want) || gotTotal != wantTotal {
			t.Fatalf("query %d %q after a search that panicked at its read check %d:\nindex %v total %d\nscan  %v total %d", i, q.Q, stop, got, gotTotal, want, wantTotal)
		}
	}
}
