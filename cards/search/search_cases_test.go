package search

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/tenants/paging"
)

// stored returns c as a store hands it back: its document read again, which normalizes it, with
// the server-owned fields it had.
func stored(c cards.Card) cards.Card {
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

// handCorpus is ten cards small enough to answer every query of searchCases by hand. Each card
// lists the tokens of its text with their best field (3 capability name, title or tag; 2 name;
// 1 description), which is what the answers below were worked out from.
func handCorpus() []cards.Card {
	type cp = cards.Capability
	card := func(id, name, desc string, protocols, tags []string, vis cards.Visibility, caps ...cp) cards.Card {
		c := cards.Card{AgentID: id, Name: name, Description: desc, Protocols: protocols, Tags: tags, Capabilities: caps,
			Visibility: vis, ID: "id-" + id, Revision: 1}
		return stored(c)
	}
	return []cards.Card{
		// hotel:2 review:2 travel:3 book:3 a:1 room:1 sport:3 (a capability's tag, not the card's)
		card("Hotel", "Hotel Review", "", []string{"a2a"}, []string{"travel"}, cards.VisibilityTenant,
			cp{Name: "book", Description: "Book a room", Tags: []string{"sport"}}),
		// zed:2 translates:1 text:1 lang:3 translate:3
		card("Zed", "Zed", "Translates text.", []string{"a2a"}, []string{"lang"}, cards.VisibilityTenant,
			cp{Name: "translate", Description: "Translate text"}),
		// alpha:2 reviewer:2 reviews:1 pull:1 requests:1 code:3 review:3 a:1 request:1
		card("alpha", "Alpha Reviewer", "Reviews pull requests.", []string{"a2a", "http"}, []string{"code"}, cards.VisibilityTenant,
			cp{Name: "review", Description: "Review a pull request"}),
		// bravo:2 a:1 review:1 of:1 budgets:1 per:1 cost:1 center:1 cost_center:1 finance:3
		// budget:3 report:1 spend:1
		card("bravo", "Bravo", "A review of budgets per cost_center.", []string{"http"}, []string{"finance"}, cards.VisibilityTenant,
			cp{Name: "budget", Description: "Report spend"}),
		// review:2 desk:2 answers:1 questions:1 support:3 answer:3 a:1 question:1
		card("charlie", "Review Desk", "Answers questions.", []string{"http"}, []string{"support"}, cards.VisibilityTenant,
			cp{Name: "answer", Description: "Answer a question"}),
		// delta:2 reviewer:2 of:1 docs:3 proofread:3 (no whole "review")
		card("delta", "Delta Reviewer", "Reviewer of docs.", []string{"mcp"}, []string{"docs"}, cards.VisibilityTenant,
			cp{Name: "proofread", Description: "Proofread docs"}),
		// echo:2 translator:1 and:1 reviewer:1 lang:3 code:3 translate:3 review:3 (title)
		// translations:3 (title) text:1
		card("echo", "Echo", "Translator and reviewer.", []string{"a2a", "mcp"}, []string{"lang", "Code"}, cards.VisibilityTenant,
			cp{Name: "translate", Title: "Review translations", Description: "Translate text"}),
		// foxtrot:2 reviews:1 contracts:1 legal:3 review:3 a:1 contract:1
		card("foxtrot", "Foxtrot", "Reviews contracts.", []string{"http"}, []string{"legal"}, cards.VisibilityPrivate,
			cp{Name: "review", Description: "Review a contract"}),
		// golf:2 plays:1 sport:3
		card("golf", "Golf", "Plays golf.", []string{"http"}, []string{"sport"}, cards.VisibilityPublic),
		// india:2 review:1 (three times, counted once)
		card("india", "India", "Review review review.", []string{"http"}, nil, cards.VisibilityTenant),
	}
}

// searchCase is one query over handCorpus with its answer worked out by hand from docs/search.md's
// rules: pages lists every page in order (a cursor must lead from each to the next, and the last
// has none), total the matches. hits, for a q search, gives "score [matchedCapabilities]" of
// agents. hide names the cards the caller may not read.
type searchCase struct {
	name  string
	q     Query
	hide  []string
	pages [][]string
	total int
	hits  map[string]string
}

func searchCases() []searchCase {
	all := []string{"Hotel", "Zed", "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "india"}
	return []searchCase{
		// Without q: agentId byte order, upper case first; the default limit (20) holds all ten.
		{name: "everything", pages: [][]string{all}, total: 10},
		{name: "limit 3 pages", q: Query{Page: paging.Page{Limit: new(3)}}, total: 10,
			pages: [][]string{{"Hotel", "Zed", "alpha"}, {"bravo", "charlie", "delta"}, {"echo", "foxtrot", "golf"}, {"india"}}},
		// Ten cards in pages of five: two pages, and no cursor to an empty third.
		{name: "limit 5 pages", q: Query{Page: paging.Page{Limit: new(5)}}, total: 10,
			pages: [][]string{{"Hotel", "Zed", "alpha", "bravo", "charlie"}, {"delta", "echo", "foxtrot", "golf", "india"}}},
		{name: "limit 9 pages", q: Query{Page: paging.Page{Limit: new(9)}}, total: 10, pages: [][]string{all[:9], {"india"}}},
		{name: "limit 10", q: Query{Page: paging.Page{Limit: new(10)}}, total: 10, pages: [][]string{all}},
		{name: "limit 1 protocol mcp", q: Query{Page: paging.Page{Limit: new(1)}, Protocols: []string{"mcp"}}, total: 2, pages: [][]string{{"delta"}, {"echo"}}},

		// Filters: protocols and tags ignore case, capabilities do not; all values must match.
		{name: "protocol HTTP", q: Query{Protocols: []string{"HTTP"}}, total: 6,
			pages: [][]string{{"alpha", "bravo", "charlie", "foxtrot", "golf", "india"}}},
		{name: "protocol a2a", q: Query{Protocols: []string{"a2a"}}, total: 4, pages: [][]string{{"Hotel", "Zed", "alpha", "echo"}}},
		{name: "protocols a2a and http", q: Query{Protocols: []string{"a2a", "http"}}, total: 1, pages: [][]string{{"alpha"}}},
		{name: "protocol grpc", q: Query{Protocols: []string{"grpc"}}, total: 0, pages: [][]string{{}}},
		{name: "capability review", q: Query{Capabilities: []string{"review"}}, total: 2, pages: [][]string{{"alpha", "foxtrot"}}},
		{name: "capability Review", q: Query{Capabilities: []string{"Review"}}, total: 0, pages: [][]string{{}}},
		{name: "capabilities translate and review", q: Query{Capabilities: []string{"translate", "review"}}, total: 0, pages: [][]string{{}}},
		{name: "capability translate", q: Query{Capabilities: []string{"translate"}}, total: 2, pages: [][]string{{"Zed", "echo"}}},
		{name: "tag code", q: Query{Tags: []string{"code"}}, total: 2, pages: [][]string{{"alpha", "echo"}}},
		{name: "tag LANG", q: Query{Tags: []string{"LANG"}}, total: 2, pages: [][]string{{"Zed", "echo"}}},
		{name: "tags lang and code", q: Query{Tags: []string{"lang", "code"}}, total: 1, pages: [][]string{{"echo"}}},
		// The tag filter reads the card's tags; Hotel's "sport" is its capability's.
		{name: "tag sport", q: Query{Tags: []string{"sport"}}, total: 1, pages: [][]string{{"golf"}}},
		{name: "name REVIEW", q: Query{Name: "REVIEW"}, total: 4, pages: [][]string{{"Hotel", "alpha", "charlie", "delta"}}},
		{name: "name viewer", q: Query{Name: "viewer"}, total: 2, pages: [][]string{{"alpha", "delta"}}},
		{name: "name o", q: Query{Name: "o"}, total: 5, pages: [][]string{{"Hotel", "bravo", "echo", "foxtrot", "golf"}}},
		{name: "name across words", q: Query{Name: "l r"}, total: 1, pages: [][]string{{"Hotel"}}},
		{name: "name %", q: Query{Name: "%"}, total: 0, pages: [][]string{{}}},
		{name: "all filters", q: Query{Protocols: []string{"http"}, Tags: []string{"finance"}, Capabilities: []string{"budget"}, Name: "bra"},
			total: 1, pages: [][]string{{"bravo"}}},

		// q. "review" is a capability name or title (3) in alpha, echo and foxtrot, in the name
		// (2) of Hotel and charlie, in the description (1) of bravo and india; delta has only
		// "reviewer", a prefix match of the word being typed, so it comes last although its
		// field is the name. Ties go by agentId, Hotel before charlie. Pages of two cut each tie.
		{name: "q review", q: Query{Q: "review", Page: paging.Page{Limit: new(2)}}, total: 8,
			pages: [][]string{{"alpha", "echo"}, {"foxtrot", "Hotel"}, {"charlie", "bravo"}, {"india", "delta"}},
			// Only a capability's name or description makes it matched, not its title (echo).
			hits: map[string]string{"alpha": "1 [review]", "echo": "1 []", "foxtrot": "1 [review]", "Hotel": "1 []", "delta": "1 []"}},
		// Only the last word may match as a prefix: delta's "reviewer" no longer counts. alpha
		// matched both words, the others one of two.
		{name: "q review pull", q: Query{Q: "review pull"}, total: 7,
			pages: [][]string{{"alpha", "echo", "foxtrot", "Hotel", "charlie", "bravo", "india"}},
			hits:  map[string]string{"alpha": "1 [review]", "echo": "0.5 []", "india": "0.5 []"}},
		{name: "q pull review", q: Query{Q: "pull review"}, total: 8,
			pages: [][]string{{"alpha", "echo", "foxtrot", "Hotel", "charlie", "bravo", "india", "delta"}},
			hits:  map[string]string{"alpha": "1 [review]", "delta": "0.5 []"}},
		// Three characters may be a prefix; all are prefix matches now, so delta joins the name
		// group (weight 2).
		{name: "q rev", q: Query{Q: "rev"}, total: 8,
			pages: [][]string{{"alpha", "echo", "foxtrot", "Hotel", "charlie", "delta", "bravo", "india"}},
			hits:  map[string]string{"alpha": "1 [review]", "delta": "1 []"}},
		{name: "q re is too short for a prefix", q: Query{Q: "re"}, total: 0, pages: [][]string{{}}},
		{name: "q translat", q: Query{Q: "translat"}, total: 2, pages: [][]string{{"Zed", "echo"}},
			hits: map[string]string{"Zed": "1 [translate]", "echo": "1 [translate]"}},
		{name: "q spend text", q: Query{Q: "spend text"}, total: 3, pages: [][]string{{"Zed", "bravo", "echo"}},
			hits: map[string]string{"Zed": "0.5 [translate]", "bravo": "0.5 [budget]", "echo": "0.5 [translate]"}},
		// q reads capabilities' tags: Hotel and golf tie on a tag-level match.
		{name: "q sport", q: Query{Q: "sport"}, total: 2, pages: [][]string{{"Hotel", "golf"}}, hits: map[string]string{"Hotel": "1 []"}},
		// A compound is three tokens: cost_center's are all in bravo; of cost, centre and
		// cost_centre it has one.
		{name: "q cost_center", q: Query{Q: "cost_center"}, total: 1, pages: [][]string{{"bravo"}}, hits: map[string]string{"bravo": "1 []"}},
		{name: "q cost_centre", q: Query{Q: "cost_centre"}, total: 1, pages: [][]string{{"bravo"}}, hits: map[string]string{"bravo": "0.333 []"}},
		// No stop words: "a" is a word like any other (no prefix at one character).
		{name: "q a", q: Query{Q: "A"}, total: 5, pages: [][]string{{"Hotel", "alpha", "bravo", "charlie", "foxtrot"}}},
		{name: "q zebra", q: Query{Q: "zebra"}, total: 0, pages: [][]string{{}}},

		// q with filters.
		{name: "q review protocol http", q: Query{Q: "review", Protocols: []string{"http"}, Page: paging.Page{Limit: new(2)}}, total: 5,
			pages: [][]string{{"alpha", "foxtrot"}, {"charlie", "bravo"}, {"india"}}},
		{name: "q review tag code", q: Query{Q: "review", Tags: []string{"code"}}, total: 2, pages: [][]string{{"alpha", "echo"}}},
		{name: "q review capability translate", q: Query{Q: "review", Capabilities: []string{"translate"}}, total: 1, pages: [][]string{{"echo"}}},
		{name: "q translat name review", q: Query{Q: "translat", Name: "review"}, total: 0, pages: [][]string{{}}},

		// Only readable cards are found and counted; a private card (foxtrot) is found like any
		// other by a caller who may read it, above.
		{name: "hidden", q: Query{Page: paging.Page{Limit: new(3)}}, hide: []string{"foxtrot", "Zed"}, total: 8,
			pages: [][]string{{"Hotel", "alpha", "bravo"}, {"charlie", "delta", "echo"}, {"golf", "india"}}},
		{name: "hidden protocol http", q: Query{Protocols: []string{"http"}}, hide: []string{"foxtrot", "Zed"}, total: 5,
			pages: [][]string{{"alpha", "bravo", "charlie", "golf", "india"}}},
		{name: "hidden q review", q: Query{Q: "review", Page: paging.Page{Limit: new(3)}}, hide: []string{"foxtrot", "Zed"}, total: 7,
			pages: [][]string{{"alpha", "echo", "Hotel"}, {"charlie", "bravo", "india"}, {"delta"}}},
		{name: "hidden name o", q: Query{Name: "o", Page: paging.Page{Limit: new(2)}}, hide: []string{"foxtrot", "Zed"}, total: 4,
			pages: [][]string{{"Hotel", "bravo"}, {"echo", "golf"}}},
	}
}

// pageAnswer is what a search mode answered for one page.
type pageAnswer struct {
	ids    []string
	total  int
	next   string
	hits   map[string]string // "score [matchedCapabilities]" by agent; nil when the mode has none
	scored int               // items carrying a score or matchedCapabilities
}

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
func serviceSearch(t *testing.T, withIndex bool) func(q Query, hide []string) pageAnswer {
	store := &feedModel{cards: map[string]cards.Card{}}
	for _, c := range handCorpus() {
		store.cards[c.AgentID] = c
	}
	var ix *Index
	if withIndex {
		ix = NewIndex(store, store)
	}
	return func(q Query, hide []string) pageAnswer {
		s := &Service{Store: store, Gate: admitAll{}, Index: ix, Authz: hiding(hide)}
		res, err := s.Search(caller, "t", q)
		if err != nil {
			t.Fatalf("%+v: %v", q, err)
		}
		a := pageAnswer{ids: []string{}, total: res.Total, next: res.NextCursor, hits: map[string]string{}}
		for _, h := range res.Items {
			a.ids = append(a.ids, h.Card.AgentID)
			if h.Score != nil || h.MatchedCapabilities != nil {
				a.scored++
			}
			if h.Score != nil {
				caps := h.MatchedCapabilities
				if caps == nil {
					caps = []string{}
				}
				a.hits[h.Card.AgentID] = fmt.Sprintf("%.3g %v", *h.Score, caps)
			}
		}
		return a
	}
}

// churnedIndexSearch answers from a tenantIndex whose documents are spread over several bitmap
// words by removed ones (no compaction), with every list dense enough for bitmaps and scoring
// split in two: the index's other code paths, on the same answers.
func churnedIndexSearch(t *testing.T) func(q Query, hide []string) pageAnswer {
	return churnedIndexSearchOf(t, false)
}

// churnedIndexSearchOf is churnedIndexSearch, from the index written out as a snapshot and read
// back if restored.
func churnedIndexSearchOf(t *testing.T, restored bool) func(q Query, hide []string) pageAnswer {
	x := newTenantIndex()
	corpus := handCorpus()
	for _, c := range corpus[:5] {
		x.upsert(c)
	}
	for i := range 150 {
		x.upsert(cards.Card{AgentID: fmt.Sprintf("filler-%03d", i), Name: "review alpha", Protocols: []string{"http"}, Tags: []string{"code"}})
	}
	for i := range 150 {
		x.remove(fmt.Sprintf("filler-%03d", i))
	}
	for _, c := range corpus[5:] {
		x.upsert(c)
	}
	x.upsert(corpus[2]) // alpha again, now after everything else
	if words := (len(x.docs) + 63) / 64; words < 3 || x.live != len(corpus) {
		t.Fatalf("setup: %d documents, %d live", len(x.docs), x.live)
	}
	if restored {
		var err error
		if x, err = decodeSnapshot(encodeSnapshot(x, "t", analyzerStamp(), false), "t", analyzerStamp()); err != nil {
			t.Fatal(err)
		}
	}
	return func(q Query, hide []string) pageAnswer {
		p, err := q.compile()
		if err != nil {
			t.Fatalf("%+v: %v", q, err)
		}
		readable := hiding(hide)
		filter, _ := readable.ReadFilter(context.Background(), "t")
		page, total, next := x.search(&p, filter, nil)
		a := pageAnswer{ids: []string{}, total: total}
		for _, c := range page {
			a.ids = append(a.ids, c.agentID)
		}
		if next != nil {
			a.next = encodePosition(*next)
		}
		return a
	}
}

// TestSearchHandWrittenAnswers runs searchCases on every search path: Service.Search without an
// index (search.index: none), with one, and the index's bitmap and split-scoring paths. Unlike
// TestIndexAgreesWithScan, the answers do not come from the code under test.
func TestSearchHandWrittenAnswers(t *testing.T) {
	modes := []struct {
		name   string
		search func(t *testing.T) func(Query, []string) pageAnswer
		setup  func() (undo func())
	}{
		{name: "scan", search: func(t *testing.T) func(Query, []string) pageAnswer { return serviceSearch(t, false) }},
		{name: "index", search: func(t *testing.T) func(Query, []string) pageAnswer { return serviceSearch(t, true) }},
		{name: "index-churned-dense-split", search: churnedIndexSearch, setup: func() func() {
			dense, split := denseEntries, parallelWords
			denseEntries, parallelWords = 1, 2
			return func() { denseEntries, parallelWords = dense, split }
		}},
		{name: "index-churned-read-back", search: func(t *testing.T) func(Query, []string) pageAnswer { return churnedIndexSearchOf(t, true) }},
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			if m.setup != nil {
				defer m.setup()()
			}
			search := m.search(t)
			for _, c := range searchCases() {
				checkSearchCase(t, c, search)
			}
		})
	}
}

// checkSearchCase follows the case's pages from the first, checking each page, the total on
// every page, and the cursors.
func checkSearchCase(t *testing.T, c searchCase, search func(Query, []string) pageAnswer) {
	t.Helper()
	q := c.q
	var seenHits map[string]string // nil: the mode does not report scores
	for i, want := range c.pages {
		got := search(q, c.hide)
		if fmt.Sprint(got.ids) != fmt.Sprint(want) || got.total != c.total {
			t.Errorf("%s, page %d: %v total %d, want %v total %d", c.name, i+1, got.ids, got.total, want, c.total)
			return
		}
		last := i == len(c.pages)-1
		if last != (got.next == "") {
			t.Errorf("%s, page %d of %d: next cursor %q", c.name, i+1, len(c.pages), got.next)
			return
		}
		if got.hits != nil {
			if c.q.Q == "" && got.scored != 0 {
				t.Errorf("%s, page %d: a score or matchedCapabilities without q", c.name, i+1)
			}
			if c.q.Q != "" && len(got.hits) != len(got.ids) {
				t.Errorf("%s, page %d: %d of %d items scored", c.name, i+1, len(got.hits), len(got.ids))
			}
			if seenHits == nil {
				seenHits = map[string]string{}
			}
			for id, h := range got.hits {
				seenHits[id] = h
			}
		}
		q.Cursor = got.next
	}
	if seenHits == nil {
		return
	}
	for id, want := range c.hits {
		if seenHits[id] != want {
			t.Errorf("%s: %s scored %q, want %q", c.name, id, seenHits[id], want)
		}
	}
}
