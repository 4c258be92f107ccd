// Package searchtest holds what the tests of cards/search and of its index share: ten
// hand-written cards, and the answers to queries over them worked out by hand from
// docs/search.md.
package searchtest

import (
	"fmt"
	"testing"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/cardstest"
	"github.com/agentcards/agentcards/cards/search/index"
	"github.com/agentcards/agentcards/tenants/paging"
)

// HandCorpus is ten cards small enough to answer every query of Cases by hand. Each card
// lists the tokens of its text with their best field (3 capability name, title or tag; 2 name;
// 1 description), which is what the answers below were worked out from.
func HandCorpus() []cards.Card {
	type cp = cards.Capability
	card := func(id, name, desc string, protocols, tags []string, vis cards.Visibility, caps ...cp) cards.Card {
		c := cards.Card{AgentID: id, Name: name, Description: desc, Protocols: protocols, Tags: tags, Capabilities: caps,
			Visibility: vis, ID: "id-" + id, Revision: 1}
		return cardstest.Stored(c)
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

// Case is one query over HandCorpus with its answer worked out by hand from docs/search.md's
// rules: Pages lists every page in order (a cursor must lead from each to the next, and the last
// has none), Total the matches. Hits, for a q search, gives "score [matchedCapabilities]" of
// agents. Hide names the cards the caller may not read.
type Case struct {
	Name  string
	Q     index.Query
	Hide  []string
	Pages [][]string
	Total int
	Hits  map[string]string
}

// Cases are the hand-worked queries over HandCorpus.
func Cases() []Case {
	all := []string{"Hotel", "Zed", "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "india"}
	return []Case{
		// Without Q: agentId byte order, upper case first; the default limit (20) holds all ten.
		{Name: "everything", Pages: [][]string{all}, Total: 10},
		{Name: "limit 3 pages", Q: index.Query{Page: paging.Page{Limit: new(3)}}, Total: 10,
			Pages: [][]string{{"Hotel", "Zed", "alpha"}, {"bravo", "charlie", "delta"}, {"echo", "foxtrot", "golf"}, {"india"}}},
		// Ten cards in pages of five: two pages, and no cursor to an empty third.
		{Name: "limit 5 pages", Q: index.Query{Page: paging.Page{Limit: new(5)}}, Total: 10,
			Pages: [][]string{{"Hotel", "Zed", "alpha", "bravo", "charlie"}, {"delta", "echo", "foxtrot", "golf", "india"}}},
		{Name: "limit 9 pages", Q: index.Query{Page: paging.Page{Limit: new(9)}}, Total: 10, Pages: [][]string{all[:9], {"india"}}},
		{Name: "limit 10", Q: index.Query{Page: paging.Page{Limit: new(10)}}, Total: 10, Pages: [][]string{all}},
		{Name: "limit 1 protocol mcp", Q: index.Query{Page: paging.Page{Limit: new(1)}, Protocols: []string{"mcp"}}, Total: 2, Pages: [][]string{{"delta"}, {"echo"}}},

		// Filters: protocols and tags ignore case, capabilities do not; all values must match.
		{Name: "protocol HTTP", Q: index.Query{Protocols: []string{"HTTP"}}, Total: 6,
			Pages: [][]string{{"alpha", "bravo", "charlie", "foxtrot", "golf", "india"}}},
		{Name: "protocol a2a", Q: index.Query{Protocols: []string{"a2a"}}, Total: 4, Pages: [][]string{{"Hotel", "Zed", "alpha", "echo"}}},
		{Name: "protocols a2a and http", Q: index.Query{Protocols: []string{"a2a", "http"}}, Total: 1, Pages: [][]string{{"alpha"}}},
		{Name: "protocol grpc", Q: index.Query{Protocols: []string{"grpc"}}, Total: 0, Pages: [][]string{{}}},
		{Name: "capability review", Q: index.Query{Capabilities: []string{"review"}}, Total: 2, Pages: [][]string{{"alpha", "foxtrot"}}},
		{Name: "capability Review", Q: index.Query{Capabilities: []string{"Review"}}, Total: 0, Pages: [][]string{{}}},
		{Name: "capabilities translate and review", Q: index.Query{Capabilities: []string{"translate", "review"}}, Total: 0, Pages: [][]string{{}}},
		{Name: "capability translate", Q: index.Query{Capabilities: []string{"translate"}}, Total: 2, Pages: [][]string{{"Zed", "echo"}}},
		{Name: "tag code", Q: index.Query{Tags: []string{"code"}}, Total: 2, Pages: [][]string{{"alpha", "echo"}}},
		{Name: "tag LANG", Q: index.Query{Tags: []string{"LANG"}}, Total: 2, Pages: [][]string{{"Zed", "echo"}}},
		{Name: "tags lang and code", Q: index.Query{Tags: []string{"lang", "code"}}, Total: 1, Pages: [][]string{{"echo"}}},
		// The tag filter reads the card's tags; Hotel's "sport" is its capability's.
		{Name: "tag sport", Q: index.Query{Tags: []string{"sport"}}, Total: 1, Pages: [][]string{{"golf"}}},
		{Name: "name REVIEW", Q: index.Query{Name: "REVIEW"}, Total: 4, Pages: [][]string{{"Hotel", "alpha", "charlie", "delta"}}},
		{Name: "name viewer", Q: index.Query{Name: "viewer"}, Total: 2, Pages: [][]string{{"alpha", "delta"}}},
		{Name: "name o", Q: index.Query{Name: "o"}, Total: 5, Pages: [][]string{{"Hotel", "bravo", "echo", "foxtrot", "golf"}}},
		{Name: "name across words", Q: index.Query{Name: "l r"}, Total: 1, Pages: [][]string{{"Hotel"}}},
		{Name: "name %", Q: index.Query{Name: "%"}, Total: 0, Pages: [][]string{{}}},
		{Name: "all filters", Q: index.Query{Protocols: []string{"http"}, Tags: []string{"finance"}, Capabilities: []string{"budget"}, Name: "bra"},
			Total: 1, Pages: [][]string{{"bravo"}}},

		// q. "review" is a capability name or title (3) in alpha, echo and foxtrot, in the name
		// (2) of Hotel and charlie, in the description (1) of bravo and india; delta has only
		// "reviewer", a prefix match of the word being typed, so it comes last although its
		// field is the name. Ties go by agentId, Hotel before charlie. Pages of two cut each tie.
		{Name: "q review", Q: index.Query{Q: "review", Page: paging.Page{Limit: new(2)}}, Total: 8,
			Pages: [][]string{{"alpha", "echo"}, {"foxtrot", "Hotel"}, {"charlie", "bravo"}, {"india", "delta"}},
			// Only a capability's name or description makes it matched, not its title (echo).
			Hits: map[string]string{"alpha": "1 [review]", "echo": "1 []", "foxtrot": "1 [review]", "Hotel": "1 []", "delta": "1 []"}},
		// Only the last word may match as a prefix: delta's "reviewer" no longer counts. alpha
		// matched both words, the others one of two.
		{Name: "q review pull", Q: index.Query{Q: "review pull"}, Total: 7,
			Pages: [][]string{{"alpha", "echo", "foxtrot", "Hotel", "charlie", "bravo", "india"}},
			Hits:  map[string]string{"alpha": "1 [review]", "echo": "0.5 []", "india": "0.5 []"}},
		{Name: "q pull review", Q: index.Query{Q: "pull review"}, Total: 8,
			Pages: [][]string{{"alpha", "echo", "foxtrot", "Hotel", "charlie", "bravo", "india", "delta"}},
			Hits:  map[string]string{"alpha": "1 [review]", "delta": "0.5 []"}},
		// Three characters may be a prefix; all are prefix matches now, so delta joins the name
		// group (weight 2).
		{Name: "q rev", Q: index.Query{Q: "rev"}, Total: 8,
			Pages: [][]string{{"alpha", "echo", "foxtrot", "Hotel", "charlie", "delta", "bravo", "india"}},
			Hits:  map[string]string{"alpha": "1 [review]", "delta": "1 []"}},
		{Name: "q re is too short for a prefix", Q: index.Query{Q: "re"}, Total: 0, Pages: [][]string{{}}},
		{Name: "q translat", Q: index.Query{Q: "translat"}, Total: 2, Pages: [][]string{{"Zed", "echo"}},
			Hits: map[string]string{"Zed": "1 [translate]", "echo": "1 [translate]"}},
		{Name: "q spend text", Q: index.Query{Q: "spend text"}, Total: 3, Pages: [][]string{{"Zed", "bravo", "echo"}},
			Hits: map[string]string{"Zed": "0.5 [translate]", "bravo": "0.5 [budget]", "echo": "0.5 [translate]"}},
		// q reads capabilities' tags: Hotel and golf tie on a tag-level match.
		{Name: "q sport", Q: index.Query{Q: "sport"}, Total: 2, Pages: [][]string{{"Hotel", "golf"}}, Hits: map[string]string{"Hotel": "1 []"}},
		// A compound is three tokens: cost_center's are all in bravo; of cost, centre and
		// cost_centre it has one.
		{Name: "q cost_center", Q: index.Query{Q: "cost_center"}, Total: 1, Pages: [][]string{{"bravo"}}, Hits: map[string]string{"bravo": "1 []"}},
		{Name: "q cost_centre", Q: index.Query{Q: "cost_centre"}, Total: 1, Pages: [][]string{{"bravo"}}, Hits: map[string]string{"bravo": "0.333 []"}},
		// No stop words: "a" is a word like any other (no prefix at one character).
		{Name: "q a", Q: index.Query{Q: "A"}, Total: 5, Pages: [][]string{{"Hotel", "alpha", "bravo", "charlie", "foxtrot"}}},
		{Name: "q zebra", Q: index.Query{Q: "zebra"}, Total: 0, Pages: [][]string{{}}},

		// q with filters.
		{Name: "q review protocol http", Q: index.Query{Q: "review", Protocols: []string{"http"}, Page: paging.Page{Limit: new(2)}}, Total: 5,
			Pages: [][]string{{"alpha", "foxtrot"}, {"charlie", "bravo"}, {"india"}}},
		{Name: "q review tag code", Q: index.Query{Q: "review", Tags: []string{"code"}}, Total: 2, Pages: [][]string{{"alpha", "echo"}}},
		{Name: "q review capability translate", Q: index.Query{Q: "review", Capabilities: []string{"translate"}}, Total: 1, Pages: [][]string{{"echo"}}},
		{Name: "q translat name review", Q: index.Query{Q: "translat", Name: "review"}, Total: 0, Pages: [][]string{{}}},

		// Only readable cards are found and counted; a private card (foxtrot) is found like any
		// other by a caller who may read it, above.
		{Name: "hidden", Q: index.Query{Page: paging.Page{Limit: new(3)}}, Hide: []string{"foxtrot", "Zed"}, Total: 8,
			Pages: [][]string{{"Hotel", "alpha", "bravo"}, {"charlie", "delta", "echo"}, {"golf", "india"}}},
		{Name: "hidden protocol http", Q: index.Query{Protocols: []string{"http"}}, Hide: []string{"foxtrot", "Zed"}, Total: 5,
			Pages: [][]string{{"alpha", "bravo", "charlie", "golf", "india"}}},
		{Name: "hidden q review", Q: index.Query{Q: "review", Page: paging.Page{Limit: new(3)}}, Hide: []string{"foxtrot", "Zed"}, Total: 7,
			Pages: [][]string{{"alpha", "echo", "Hotel"}, {"charlie", "bravo", "india"}, {"delta"}}},
		{Name: "hidden name o", Q: index.Query{Name: "o", Page: paging.Page{Limit: new(2)}}, Hide: []string{"foxtrot", "Zed"}, Total: 4,
			Pages: [][]string{{"Hotel", "bravo"}, {"echo", "golf"}}},
	}
}

// Answer is what a search mode answered for one page.
type Answer struct {
	IDs    []string
	Total  int
	Next   string
	Hits   map[string]string // "score [matchedCapabilities]" by agent; nil when the mode has none
	Scored int               // items carrying a score or matchedCapabilities
}

// CheckCase follows the case's pages from the first, checking each page, the total on
// every page, and the cursors.
func CheckCase(t *testing.T, c Case, search func(index.Query, []string) Answer) {
	t.Helper()
	q := c.Q
	var seenHits map[string]string // nil: the mode does not report scores
	for i, want := range c.Pages {
		got := search(q, c.Hide)
		if fmt.Sprint(got.IDs) != fmt.Sprint(want) || got.Total != c.Total {
			t.Errorf("%s, page %d: %v total %d, want %v total %d", c.Name, i+1, got.IDs, got.Total, want, c.Total)
			return
		}
		last := i == len(c.Pages)-1
		if last != (got.Next == "") {
			t.Errorf("%s, page %d of %d: next cursor %q", c.Name, i+1, len(c.Pages), got.Next)
			return
		}
		if got.Hits != nil {
			if c.Q.Q == "" && got.Scored != 0 {
				t.Errorf("%s, page %d: a score or matchedCapabilities without q", c.Name, i+1)
			}
			if c.Q.Q != "" && len(got.Hits) != len(got.IDs) {
				t.Errorf("%s, page %d: %d of %d items scored", c.Name, i+1, len(got.Hits), len(got.IDs))
			}
			if seenHits == nil {
				seenHits = map[string]string{}
			}
			for id, h := range got.Hits {
				seenHits[id] = h
			}
		}
		q.Cursor = got.Next
	}
	if seenHits == nil {
		return
	}
	for id, want := range c.Hits {
		if seenHits[id] != want {
			t.Errorf("%s: %s scored %q, want %q", c.Name, id, seenHits[id], want)
		}
	}
}
