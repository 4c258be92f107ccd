package web_test

import (
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/tenants/paging"
)

// publicCorpusSize is enough cards for the listing without an index to read several batches
// (scanBatch, 500 in cards/search/batches.go) for one page.
const publicCorpusSize = 1200

// publicCorpus returns the cards of TestA2AAgentsAcrossBatches and the agentIds of the public
// ones. Four id prefixes interleave in creation order but sort apart ("A-" < "a-" < "a." < "a_"
// in byte order): the "A-" cards are public one in three, all "a-" and all but the last "a."
// are private or tenant, so about 600 cards that are not public lie between two public ones,
// more than a batch; the "a_" cards are public four in five, and the last card, "zz-private",
// follows them all.
func publicCorpus() (docs []map[string]any, public []string) {
	prefixes := []string{"A-", "a-", "a.", "a_"}
	for i := range publicCorpusSize {
		id := fmt.Sprintf("%s%04d", prefixes[i%4], i)
		var pub bool
		switch i % 4 {
		case 0:
			pub = i%3 == 0
		case 2:
			pub = i == publicCorpusSize-2
		case 3:
			pub = i%5 != 0
		}
		vis := []string{"private", "tenant"}[i%2]
		if pub {
			vis = "public"
			public = append(public, id)
		}
		docs = append(docs, map[string]any{"agentId": id, "name": "Agent " + id, "description": "No. " + id, "visibility": vis})
	}
	docs = append(docs, map[string]any{"agentId": "zz-private", "name": "Last", "visibility": "private"})
	slices.Sort(public) // the list's order: agentId, byte by byte
	return docs, public
}

// TestA2AAgentsAcrossBatches pages through the public agent list of a tenant with more cards
// than one read batch, on every database, from a server without a search index (which reads
// the cards batch by batch) and from one with an index, over the same database: every public
// card is listed exactly once, in agentId order, with its name and card URL, and no other card.
func TestA2AAgentsAcrossBatches(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, d string) {
		db := storagetest.Open(t, d)
		scan := newEnvWith(t, db, envOptions{noIndex: true})
		indexed := newEnvWith(t, db, envOptions{})
		scan.mkTenant("acme", "alice")
		alice := scan.token("alice", "acme", false)
		docs, public := publicCorpus()
		if len(public) < 300 {
			t.Fatalf("setup: only %d public cards", len(public))
		}
		for _, doc := range docs {
			expect(t, scan.do("POST", "/v1/tenants/acme/cards", alice, doc), http.StatusCreated)
		}
		for _, e := range []struct {
			name string
			*env
		}{{"none", scan}, {"memory", indexed}} {
			for _, limit := range []int{100, 31, 0} {
				t.Run(fmt.Sprintf("%s/limit=%d", e.name, limit), func(t *testing.T) {
					want := limit
					if limit == 0 {
						want = 20 // the default
					}
					got := listPublic(t, e.env, "acme", limit, want)
					if !slices.Equal(got, public) {
						t.Fatalf("listed %d agents, want the %d public ones in order:\n%s", len(got), len(public), firstDiff(got, public))
					}
				})
			}
		}
	})
}

// TestA2AAgentsLastPageHasNoCursor: a page that holds the last public card has no nextCursor,
// even when private cards follow it, with or without an index, so a client does not fetch an
// empty page; the index-backed list already answers so, and both modes must page alike.
func TestA2AAgentsLastPageHasNoCursor(t *testing.T) {
	forEachDialectAndIndex(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		alice := e.token("alice", "acme", false)
		for _, id := range []string{"p1", "p2", "p3", "q-private"} {
			vis := "public"
			if id == "q-private" {
				vis = "private"
			}
			expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, map[string]any{"agentId": id, "name": "Agent " + id, "visibility": vis}), http.StatusCreated)
		}
		// The cursor after p2, as the list (cards/a2a names it "agents") writes it.
		afterP2 := paging.EncodeCursor("agents", "p2")
		for _, c := range []struct {
			query string
			want  string
		}{
			{"limit=3", `{"items":[p1 p2 p3]}`},
			{"limit=2", `{"items":[p1 p2],"nextCursor":"` + afterP2 + `"}`},
			{"limit=2&cursor=" + afterP2, `{"items":[p3]}`},
			{"limit=1&cursor=" + afterP2, `{"items":[p3]}`},
		} {
			r := e.do("GET", "/a2a/acme/agents?"+c.query, "", nil)
			expect(t, r, http.StatusOK)
			var page struct {
				Items      []struct{ AgentID string }
				NextCursor *string
			}
			r.json(t, &page)
			got := "{\"items\":["
			for i, it := range page.Items {
				if i > 0 {
					got += " "
				}
				got += it.AgentID
			}
			got += "]"
			if page.NextCursor != nil {
				got += fmt.Sprintf(`,"nextCursor":%q`, *page.NextCursor)
			}
			got += "}"
			if got != c.want {
				t.Errorf("%s: %s, want %s", c.query, got, c.want)
			}
		}
	})
}

// listPublic follows the public agent list of tenant to its end with the given limit (0: none
// sent), checking that every page but the last holds pageSize items and that each item is
// described as its card was written.
func listPublic(t *testing.T, e *env, tenant string, limit, pageSize int) []string {
	t.Helper()
	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > publicCorpusSize {
			t.Fatal("paging does not end")
		}
		path := "/a2a/" + tenant + "/agents?"
		if limit != 0 {
			path += fmt.Sprintf("limit=%d&", limit)
		}
		if cursor != "" {
			path += "cursor=" + cursor
		}
		r := e.do("GET", path, "", nil)
		expect(t, r, http.StatusOK)
		var page struct {
			Items []struct {
				AgentID, Name, Description, CardURL string
			}
			NextCursor string
		}
		r.json(t, &page)
		for _, it := range page.Items {
			got = append(got, it.AgentID)
			if it.Name != "Agent "+it.AgentID || it.Description != "No. "+it.AgentID ||
				it.CardURL != "/a2a/"+tenant+"/"+it.AgentID+"/.well-known/agent-card.json" {
				t.Errorf("item %+v", it)
			}
		}
		if page.NextCursor == "" {
			return got
		}
		if len(page.Items) != pageSize {
			t.Fatalf("page %d: %d items and a cursor, want %d", pages+1, len(page.Items), pageSize)
		}
		cursor = page.NextCursor
	}
}

// firstDiff describes where two lists of ids first differ.
func firstDiff(got, want []string) string {
	for i := range max(len(got), len(want)) {
		g, w := "(end)", "(end)"
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			return fmt.Sprintf("at %d: got %s, want %s", i, g, w)
		}
	}
	return "no difference"
}
