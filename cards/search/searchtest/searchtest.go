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
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/tenants/paging"
)

// HandCorpus is ten cards small enough to answer every query of Cases by hand. Each card lists
// the stems of its text with their weighted counts (each occurrence weighs 3 in the name, 2 in a
// tag or a capability's name, title or tag, 1 in a description) and its length (their sum),
// which is what the answers below were worked out from; the ten lengths average 13.3.
func HandCorpus() []cards.Card {
	type cp = cards.Capability
	card := func(id, name, desc string, protocols, tags []string, vis cards.Visibility, caps ...cp) cards.Card {
		c := cards.Card{AgentID: id, Name: name, Description: desc, Protocols: protocols, Tags: tags, Capabilities: caps,
			Visibility: vis, ID: "id-" + id, Revision: 1}
		return cardstest.Stored(c)
	}
	return []cards.Card{
		// length 15: travel:2 hotel:3 review:3 book:3 a:1 room:1 sport:2 (a capability's tag)
		card("Hotel", "Hotel Review", "", []string{"a2a"}, []string{"travel"}, cards.VisibilityTenant,
			cp{Name: "book", Description: "Book a room", Tags: []string{"sport"}}),
		// length 11: lang:2 zed:3 translat:4 text:2
		card("Zed", "Zed", "Translates text.", []string{"a2a"}, []string{"lang"}, cards.VisibilityTenant,
			cp{Name: "translate", Description: "Translate text"}),
		// length 17: code:2 alpha:3 review:7 (reviewer, reviews, review) pull:2 request:2 a:1
		card("alpha", "Alpha Reviewer", "Reviews pull requests.", []string{"a2a", "http"}, []string{"code"}, cards.VisibilityTenant,
			cp{Name: "review", Description: "Review a pull request"}),
		// length 17: financ:2 bravo:3 a:1 review:1 of:1 budget:3 per:1 cost_center:1 cost:1
		// center:1 report:1 spend:1
		card("bravo", "Bravo", "A review of budgets per cost_center.", []string{"http"}, []string{"finance"}, cards.VisibilityTenant,
			cp{Name: "budget", Description: "Report spend"}),
		// length 15: support:2 review:3 desk:3 answer:4 question:2 a:1
		card("charlie", "Review Desk", "Answers questions.", []string{"http"}, []string{"support"}, cards.VisibilityTenant,
			cp{Name: "answer", Description: "Answer a question"}),
		// length 15: doc:4 delta:3 review:4 (reviewer) of:1 proofread:3
		card("delta", "Delta Reviewer", "Reviewer of docs.", []string{"mcp"}, []string{"docs"}, cards.VisibilityTenant,
			cp{Name: "proofread", Description: "Proofread docs"}),
		// length 18: lang:2 code:2 echo:3 translat:6 and:1 review:3 (reviewer, and the title) text:1
		card("echo", "Echo", "Translator and reviewer.", []string{"a2a", "mcp"}, []string{"lang", "Code"}, cards.VisibilityTenant,
			cp{Name: "translate", Title: "Review translations", Description: "Translate text"}),
		// length 12: legal:2 foxtrot:3 review:4 contract:2 a:1
		card("foxtrot", "Foxtrot", "Reviews contracts.", []string{"http"}, []string{"legal"}, cards.VisibilityPrivate,
			cp{Name: "review", Description: "Review a contract"}),
		// length 7: sport:2 golf:4 play:1
		card("golf", "Golf", "Plays golf.", []string{"http"}, []string{"sport"}, cards.VisibilityPublic),
		// length 6: india:3 review:3 (three times in the description)
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
func Cases() []Case { return append(filterCases(), textCases()...) }

// textCases are the queries of free text alone, ranked (see docs/search.md).
func textCases() []Case {
	return append([]Case{
		// q. Eight cards hold "review" (delta as "reviewer", echo in a title), so it weighs
		// little; alpha holds it most. india, short, comes next; Hotel and charlie hold it alike
		// in cards of the same length and tie, Hotel first by agentId. Pages of two cut the ties.
		{Name: "q review", Q: index.Query{Q: "review", Page: paging.Page{Limit: new(2)}}, Total: 8,
			Pages: [][]string{{"alpha", "india"}, {"foxtrot", "delta"}, {"Hotel", "charlie"}, {"echo", "bravo"}},
			// Only a capability's name or description makes it matched, not its title (echo).
			Hits: map[string]string{"alpha": "0.828 [review]", "india": "0.809 []", "foxtrot": "0.782 [review]", "delta": "0.753 []",
				"Hotel": "0.695 []", "charlie": "0.695 []", "echo": "0.664 []", "bravo": "0.408 []"}},
		// "pull" is in alpha alone: it weighs far more than "review", and alpha, with both, is far
		// ahead. The order of the words does not matter.
		{Name: "q review pull", Q: index.Query{Q: "review pull"}, Total: 8,
			Pages: [][]string{{"alpha", "india", "foxtrot", "delta", "Hotel", "charlie", "echo", "bravo"}},
			Hits:  map[string]string{"alpha": "0.608 [review]", "india": "0.0927 []", "delta": "0.0862 []", "echo": "0.0761 []"}},
		{Name: "q pull review", Q: index.Query{Q: "pull review"}, Total: 8,
			Pages: [][]string{{"alpha", "india", "foxtrot", "delta", "Hotel", "charlie", "echo", "bravo"}},
			Hits:  map[string]string{"alpha": "0.608 [review]", "delta": "0.0862 []"}},
		// Stopwords are dropped (of, a): reviews, pull and requests, stemmed, are all alpha's.
		{Name: "q reviews of a pull request", Q: index.Query{Q: "reviews of a pull request"}, Total: 8,
			Pages: [][]string{{"alpha", "india", "foxtrot", "delta", "Hotel", "charlie", "echo", "bravo"}},
			Hits:  map[string]string{"alpha": "0.595 [review]", "india": "0.0492 []"}},
		// Three characters may be a prefix: every match is of a longer word, at half its worth.
		{Name: "q rev", Q: index.Query{Q: "rev"}, Total: 8,
			Pages: [][]string{{"alpha", "india", "foxtrot", "delta", "Hotel", "charlie", "echo", "bravo"}},
			Hits:  map[string]string{"alpha": "0.414 [review]", "delta": "0.376 []"}},
		{Name: "q re is too short for a prefix", Q: index.Query{Q: "re"}, Total: 0, Pages: [][]string{{}}},
		// A word typed past its stem finds the stem of the words it may become: reviewi (on the
		// way to reviewing) finds review as rev does, at half its worth; translati (translation)
		// finds translat, at half of what translat's answer below scores.
		{Name: "q reviewi", Q: index.Query{Q: "reviewi"}, Total: 8,
			Pages: [][]string{{"alpha", "india", "foxtrot", "delta", "Hotel", "charlie", "echo", "bravo"}},
			Hits:  map[string]string{"alpha": "0.414 [review]", "delta": "0.376 []"}},
		{Name: "q translati", Q: index.Query{Q: "translati"}, Total: 2, Pages: [][]string{{"echo", "Zed"}},
			Hits: map[string]string{"Zed": "0.396 [translate]", "echo": "0.399 [translate]"}},
		// Followed by another word, it is a whole word like any other, and no card holds it: only
		// text is found, in Zed twice in a short card, in echo once in a long one.
		{Name: "q translati text", Q: index.Query{Q: "translati text"}, Total: 2, Pages: [][]string{{"Zed", "echo"}}},
		// translat is the stem of translate, translates, translator and translations: echo holds it
		// six times (a title and a name among them), Zed four in a shorter card.
		{Name: "q translat", Q: index.Query{Q: "translat"}, Total: 2, Pages: [][]string{{"echo", "Zed"}},
			Hits: map[string]string{"Zed": "0.793 [translate]", "echo": "0.798 [translate]"}},
		{Name: "q translations", Q: index.Query{Q: "translations"}, Total: 2, Pages: [][]string{{"echo", "Zed"}},
			Hits: map[string]string{"Zed": "0.793 [translate]", "echo": "0.798 [translate]"}},
		{Name: "q questions", Q: index.Query{Q: "questions"}, Total: 1, Pages: [][]string{{"charlie"}},
			Hits: map[string]string{"charlie": "0.603 [answer]"}},
		{Name: "q spend text", Q: index.Query{Q: "spend text"}, Total: 3, Pages: [][]string{{"Zed", "bravo", "echo"}},
			Hits: map[string]string{"Zed": "0.28 [translate]", "bravo": "0.234 [budget]", "echo": "0.169 [translate]"}},
		// q reads capabilities' tags: golf holds sport as its own tag in a short card, Hotel as a
		// capability's in a longer one.
		{Name: "q sport", Q: index.Query{Q: "sport"}, Total: 2, Pages: [][]string{{"golf", "Hotel"}}, Hits: map[string]string{"golf": "0.721 []", "Hotel": "0.603 []"}},
		// A compound is three words: cost_center's are all in bravo; of cost, centre and
		// cost_centre it has one.
		{Name: "q cost_center", Q: index.Query{Q: "cost_center"}, Total: 1, Pages: [][]string{{"bravo"}}, Hits: map[string]string{"bravo": "0.408 []"}},
		{Name: "q cost_centre", Q: index.Query{Q: "cost_centre"}, Total: 1, Pages: [][]string{{"bravo"}}, Hits: map[string]string{"bravo": "0.0995 []"}},
		// A query of stopwords alone keeps them: "a" is found like any word (no prefix at one
		// character), best in the shortest cards.
		{Name: "q a", Q: index.Query{Q: "A"}, Total: 5, Pages: [][]string{{"foxtrot", "Hotel", "charlie", "alpha", "bravo"}}},
		{Name: "q zebra", Q: index.Query{Q: "zebra"}, Total: 0, Pages: [][]string{{}}},
	}, synonymCases()...)
}

// synonymCases are queries read with synonym sets: each answer is that of another query
// without them, worked out above.
func synonymCases() []Case {
	set := func(id string, words ...string) []tenants.SynonymSet {
		return []tenants.SynonymSet{{ID: id, Words: words}}
	}
	i18n := set("i18n", "translation", "Localization", "i18n")
	pr := set("pr", "pull request", "PR")
	return []Case{
		// No card says localization: as a synonym of translation it finds what translations does.
		{Name: "q localization, a synonym of translation", Q: index.Query{Q: "localization", Synonyms: i18n}, Total: 2,
			Pages: [][]string{{"echo", "Zed"}}, Hits: map[string]string{"Zed": "0.793 [translate]", "echo": "0.798 [translate]"}},
		{Name: "q localization without synonyms", Q: index.Query{Q: "localization"}, Total: 0, Pages: [][]string{{}}},
		// A phrase matches the cards holding all its words, as well as the least of them: alpha
		// holds pull and request twice each in 17.
		{Name: "q pr, a synonym of pull request", Q: index.Query{Q: "PR", Synonyms: pr}, Total: 1,
			Pages: [][]string{{"alpha"}}, Hits: map[string]string{"alpha": "0.58 [review]"}},
		// The phrase in q is one term, weighed once: the answer of "review pull", not that of
		// the three words (0.595 for alpha, as "reviews of a pull request" above).
		{Name: "q review pull request, a phrase of a synonym set", Q: index.Query{Q: "review pull request", Synonyms: pr}, Total: 8,
			Pages: [][]string{{"alpha", "india", "foxtrot", "delta", "Hotel", "charlie", "echo", "bravo"}},
			Hits:  map[string]string{"alpha": "0.608 [review]", "india": "0.0927 []", "delta": "0.0862 []", "echo": "0.0761 []"}},
		// A card holding a word and its synonym matches by the better: delta's proofread (3) adds
		// nothing to its review (4), and proofread, a synonym of the common review, weighs as it.
		// The answer of "review", but that delta's proofread capability now matched.
		{Name: "q proofread, a synonym of review", Q: index.Query{Q: "proofread", Synonyms: set("review", "proofread", "review")}, Total: 8,
			Pages: [][]string{{"alpha", "india", "foxtrot", "delta", "Hotel", "charlie", "echo", "bravo"}},
			Hits: map[string]string{"alpha": "0.828 [review]", "india": "0.809 []", "foxtrot": "0.782 [review]", "delta": "0.753 [proofread]",
				"Hotel": "0.695 []", "charlie": "0.695 []", "echo": "0.664 []", "bravo": "0.408 []"}},
	}
}

// filterCases are the queries of filters, alone and with free text, and those of a caller who
// may not read every card.
func filterCases() []Case {
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

		// q with filters.
		{Name: "q review protocol http", Q: index.Query{Q: "review", Protocols: []string{"http"}, Page: paging.Page{Limit: new(2)}}, Total: 5,
			Pages: [][]string{{"alpha", "india"}, {"foxtrot", "charlie"}, {"bravo"}}},
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
			Pages: [][]string{{"alpha", "india", "delta"}, {"Hotel", "charlie", "echo"}, {"bravo"}}},
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
