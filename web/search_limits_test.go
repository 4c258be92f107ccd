package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// matchCorpus is 30 cards that match both tag=match and q=needle, and 5 that match neither.
// "needle" is a capability name in m-00, m-03, ..., m-27, in the name of m-01, m-04, ..., m-28,
// and in the description of m-02, m-05, ..., m-29; ranked is the order docs/search.md's ranking
// gives them for q=needle (a word in the name weighs 3, in a capability's name 2, in a
// description 1, in cards otherwise alike; then agentId), and sorted their agentId order.
func matchCorpus() (docs []map[string]any, sorted, ranked []string) {
	var byField [3][]string
	for i := range 30 {
		id := fmt.Sprintf("m-%02d", i)
		doc := map[string]any{"agentId": id, "name": "Agent " + id, "description": "Does things.",
			"protocols": []string{"http"}, "tags": []string{"match"},
			"capabilities": []any{map[string]any{"name": "other"}}}
		switch i % 3 {
		case 0:
			doc["capabilities"] = []any{map[string]any{"name": "needle"}}
		case 1:
			doc["name"] = "Needle " + id
		case 2:
			doc["description"] = "Finds a needle."
		}
		docs = append(docs, doc)
		sorted = append(sorted, id)
		byField[i%3] = append(byField[i%3], id)
	}
	for i := range 5 {
		docs = append(docs, map[string]any{"agentId": fmt.Sprintf("n-%d", i), "name": "Haystack", "tags": []string{"other"}})
	}
	return docs, sorted, slices.Concat(byField[1], byField[0], byField[2])
}

// pageThrough follows a search from its first page, checking the total on every page and that
// every page but the last holds size items, and returns the agentIds in the order served.
func pageThrough(t *testing.T, e *env, tok, query string, size, total int) []string {
	t.Helper()
	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > total {
			t.Fatalf("%s: paging does not end", query)
		}
		path := query
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		a := e.search(tok, "acme", path)
		if a.Total != total {
			t.Fatalf("%s, page %d: total %d, want %d", query, pages+1, a.Total, total)
		}
		got = append(got, a.ids()...)
		if a.NextCursor == "" {
			if len(a.Items) == 0 || len(a.Items) > size {
				t.Fatalf("%s, last page %d: %d items", query, pages+1, len(a.Items))
			}
			return got
		}
		if len(a.Items) != size {
			t.Fatalf("%s, page %d: %d items and a cursor, want %d", query, pages+1, len(a.Items), size)
		}
		cursor = a.NextCursor
	}
}

// TestSearchTotalAndLimits: total counts every match, not the page, for filters and for q; the
// limit defaults to 20 and may be at most 100 (docs/search.md): 0 or 101 is a 400 naming limit.
func TestSearchTotalAndLimits(t *testing.T) {
	forEachDialectAndIndex(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		alice := e.token("alice", "acme", false)
		docs, sorted, ranked := matchCorpus()
		for _, doc := range docs {
			expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, doc), http.StatusCreated)
		}
		for _, c := range []struct {
			query string
			size  int
			want  []string
		}{
			// Three pages of ten, then pages that cut the ranking's groups.
			{"tag=match&limit=10", 10, sorted},
			{"q=needle&limit=10", 10, ranked},
			{"tag=match&limit=7", 7, sorted},
			{"q=needle&limit=7", 7, ranked},
			{"q=needle&tag=match&protocol=http&limit=4", 4, ranked},
			// No limit: pages of 20.
			{"tag=match", 20, sorted},
			{"q=needle", 20, ranked},
			// At most 100: all on one page.
			{"q=needle&limit=100", 100, ranked},
		} {
			if got := pageThrough(t, e, alice, c.query, c.size, len(c.want)); !slices.Equal(got, c.want) {
				t.Errorf("%s: %v, want %v", c.query, got, c.want)
			}
		}
		if a := e.search(alice, "acme", "limit=100"); a.Total != 35 || len(a.Items) != 35 || a.NextCursor != "" {
			t.Errorf("limit=100: total %d, %d items, cursor %q", a.Total, len(a.Items), a.NextCursor)
		}
		// The POST form defaults and bounds the same way.
		r := e.do("POST", "/v1/tenants/acme/cards/search", alice, map[string]any{"q": "needle"})
		expect(t, r, http.StatusOK)
		var a searchAnswer
		r.json(t, &a)
		if a.Total != 30 || !slices.Equal(a.ids(), ranked[:20]) || a.NextCursor == "" {
			t.Errorf("POST without limit: total %d, %v, cursor %q", a.Total, a.ids(), a.NextCursor)
		}
		for _, req := range []struct {
			method, query string
			body          any
		}{
			{"GET", "limit=101", nil}, {"GET", "limit=0", nil}, {"GET", "q=needle&limit=101", nil},
			{"POST", "", map[string]any{"limit": 101}}, {"POST", "", map[string]any{"limit": 0, "q": "needle"}},
		} {
			path := "/v1/tenants/acme/cards"
			if req.method == "POST" {
				path += "/search"
			} else {
				path += "?" + req.query
			}
			r := e.do(req.method, path, alice, req.body)
			expect(t, r, http.StatusBadRequest, "invalid")
			if msg := errMessage(t, r); !strings.HasPrefix(msg, "limit") {
				t.Errorf("%s %s %v: the message does not name limit: %q", req.method, req.query, req.body, msg)
			}
		}
	})
}

// TestSearchQueryWords: q may hold at most 32 distinct tokens (docs/search.md); repeating a word
// does not count it again, each token counts in the score (a word no card holds weighs the
// most), and a compound counts as its parts and itself.
func TestSearchQueryWords(t *testing.T) {
	forEachDialectAndIndex(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		alice := e.token("alice", "acme", false)
		docs, _, ranked := matchCorpus()
		for _, doc := range docs {
			expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, doc), http.StatusCreated)
		}
		words := func(n int) []string {
			out := []string{"needle"}
			for i := 1; i < n; i++ {
				out = append(out, fmt.Sprintf("w%d", i))
			}
			return out
		}
		q := func(ws []string) string { return "q=" + url.QueryEscape(strings.Join(ws, " ")) + "&limit=100" }

		// 32 distinct words: needle and 31 that no card holds, which weigh in every score.
		alone := map[string]float64{}
		for _, h := range e.search(alice, "acme", q(words(1))).Items {
			alone[h.Card.AgentID] = *h.Score
		}
		a := e.search(alice, "acme", q(words(32)))
		if a.Total != 30 || !slices.Equal(a.ids(), ranked) {
			t.Fatalf("32 words: total %d, %v", a.Total, a.ids())
		}
		for _, h := range a.Items {
			if h.Score == nil || *h.Score <= 0 || *h.Score >= alone[h.Card.AgentID]/10 {
				t.Fatalf("32 words: %s scored %v, want above 0 and far below its %v for needle alone", h.Card.AgentID, h.Score, alone[h.Card.AgentID])
			}
		}
		top := *a.Items[0].Score
		// 40 words of which 32 are distinct: the same score.
		if a := e.search(alice, "acme", q(append(words(32), words(8)...))); a.Total != 30 || *a.Items[0].Score != top {
			t.Fatalf("40 words, 32 distinct: total %d, score %v, want %v", a.Total, *a.Items[0].Score, top)
		}
		// Case does not make a word distinct.
		if a := e.search(alice, "acme", q(append(words(32), "NEEDLE", "W1"))); a.Total != 30 {
			t.Fatalf("32 words and two in capitals: total %d", a.Total)
		}
		// 33 distinct words: a 400 naming q, for GET and POST.
		r := e.do("GET", "/v1/tenants/acme/cards?"+q(words(33)), alice, nil)
		expect(t, r, http.StatusBadRequest, "invalid")
		if msg := errMessage(t, r); !strings.HasPrefix(msg, "q:") {
			t.Errorf("33 words: the message does not name q: %q", msg)
		}
		r = e.do("POST", "/v1/tenants/acme/cards/search", alice, map[string]any{"q": strings.Join(words(33), " ")})
		expect(t, r, http.StatusBadRequest, "invalid")
		// Compounds: ten of them are 30 tokens, with needle and one more word 32; an eleventh
		// compound makes 34.
		compounds := func(n int) []string {
			out := []string{"needle", "w0"}
			for i := range n {
				out = append(out, fmt.Sprintf("c%d_d%d", i, i))
			}
			return out
		}
		// needle and 31 words no card holds, as with 32 words.
		if a := e.search(alice, "acme", q(compounds(10))); a.Total != 30 || *a.Items[0].Score != top {
			t.Fatalf("ten compounds and two words: total %d, score %v, want %v", a.Total, *a.Items[0].Score, top)
		}
		expect(t, e.do("GET", "/v1/tenants/acme/cards?"+q(compounds(11)), alice, nil), http.StatusBadRequest, "invalid")
	})
}
