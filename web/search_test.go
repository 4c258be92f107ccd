package web_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/web/webtest"
)

// searchCorpus is small enough that the right answer to each query is obvious to a person.
func searchCorpus() []map[string]any {
	card := func(id, name, desc string, protocols, tags []string, caps []map[string]any, resources ...string) map[string]any {
		res := []any{}
		for _, r := range resources {
			res = append(res, map[string]any{"uri": r, "access": "read"})
		}
		cs := []any{}
		for _, c := range caps {
			cs = append(cs, c)
		}
		return map[string]any{"agentId": id, "name": name, "description": desc, "protocols": protocols,
			"tags": tags, "capabilities": cs, "resources": res}
	}
	cp := func(name, desc string) map[string]any { return map[string]any{"name": name, "description": desc} }
	return []map[string]any{
		card("code-reviewer", "Code Reviewer", "Looks at changes before they merge.", []string{"a2a", "http"}, []string{"code", "GitHub"},
			[]map[string]any{cp("review_pr", "Review a pull request and comment on it"), cp("lint", "Lint a repository")},
			"https://github.com/acme/*"),
		card("doc-writer", "Doc Writer", "Writes documentation; a human may review it later.", []string{"http"}, []string{"docs"},
			[]map[string]any{cp("write_docs", "Write docs for a module"), cp("summarize", "Summarize a long text")},
			"https://wiki.example.com/data"),
		card("budget-bot", "Budget Bot", "Tracks spend per cost_center.", []string{"mcp", "http"}, []string{"finance"},
			[]map[string]any{cp("budget", "Report the budget of a cost center"), cp("forecast", "Forecast spend")},
			"https://erp.example.com/data/*"),
		card("costume-shop", "Costume Shop 100%_off*", "Sells costumes.", []string{"http"}, []string{"retail"},
			[]map[string]any{cp("sell", "Sell a costume")}, "https://erp.example.com/database"),
		card("Translator", "Übersetzer", "Translates text between languages.", []string{"a2a"}, []string{"Language", "code"},
			[]map[string]any{cp("translate", "Translate text")}),
	}
}

type searchAnswer struct {
	Total      int       `json:"total"`
	Items      []hitJSON `json:"items"`
	NextCursor string    `json:"nextCursor"`
}

func (a searchAnswer) ids() []string {
	out := []string{}
	for _, h := range a.Items {
		out = append(out, h.Card.AgentID)
	}
	return out
}

func (e *env) search(tok, tenant, query string) searchAnswer {
	e.t.Helper()
	r := e.do("GET", "/v1/tenants/"+tenant+"/cards?"+query, tok, nil)
	expect(e.t, r, http.StatusOK)
	var a searchAnswer
	r.json(e.t, &a)
	return a
}

func TestSearchFilters(t *testing.T) {
	forEachDialectAndIndex(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		alice := e.token("alice", "acme", false)
		for _, c := range searchCorpus() {
			expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, c), http.StatusCreated)
		}
		cases := []struct {
			query string
			want  []string
		}{
			{"", []string{"Translator", "budget-bot", "code-reviewer", "costume-shop", "doc-writer"}},
			{"protocol=http", []string{"budget-bot", "code-reviewer", "costume-shop", "doc-writer"}},
			{"protocol=HTTP&protocol=a2a", []string{"code-reviewer"}},
			{"protocol=a2a", []string{"Translator", "code-reviewer"}},
			{"protocol=grpc", []string{}},
			{"capability=review_pr", []string{"code-reviewer"}},
			{"capability=review_pr&capability=lint", []string{"code-reviewer"}},
			{"capability=review_pr&capability=budget", []string{}},
			{"capability=Review_PR", []string{}},
			{"tag=code", []string{"Translator", "code-reviewer"}},
			{"tag=github", []string{"code-reviewer"}},
			{"tag=code&tag=language", []string{"Translator"}},
			{"name=bot", []string{"budget-bot"}},
			{"name=O", []string{"budget-bot", "code-reviewer", "costume-shop", "doc-writer"}},
			{"name=" + url.QueryEscape("100%_off*"), []string{"costume-shop"}},
			{"name=" + url.QueryEscape("%"), []string{"costume-shop"}},
			{"name=" + url.QueryEscape("_"), []string{"costume-shop"}},
			{"name=" + url.QueryEscape("*"), []string{"costume-shop"}},
			{"name=übers", []string{"Translator"}},
			{"name=xyz", []string{}},
			{"resource=" + url.QueryEscape("https://github.com/acme/web"), []string{"code-reviewer"}},
			{"resource=" + url.QueryEscape("https://github.com/acme/web/pulls/1"), []string{"code-reviewer"}},
			{"resource=" + url.QueryEscape("https://github.com/acme"), []string{}},
			{"resource=" + url.QueryEscape("https://github.com/other/web"), []string{}},
			{"resource=" + url.QueryEscape("https://erp.example.com/data/x"), []string{"budget-bot"}},
			{"resource=" + url.QueryEscape("https://erp.example.com/data/x/y"), []string{"budget-bot"}},
			{"resource=" + url.QueryEscape("https://erp.example.com/database"), []string{"costume-shop"}},
			{"resource=" + url.QueryEscape("https://wiki.example.com/data"), []string{"doc-writer"}},
			{"resource=" + url.QueryEscape("https://wiki.example.com/data/x"), []string{"doc-writer"}},
			{"resource=" + url.QueryEscape("https://wiki.example.com:443/data"), []string{"doc-writer"}},
			{"resource=" + url.QueryEscape("http://wiki.example.com/data"), []string{}},
			{"protocol=http&tag=finance&capability=budget&name=budget", []string{"budget-bot"}},
			{"protocol=http&tag=code", []string{"code-reviewer"}},
		}
		for _, c := range cases {
			got := e.search(alice, "acme", c.query)
			if fmt.Sprint(got.ids()) != fmt.Sprint(c.want) || got.Total != len(c.want) {
				t.Errorf("%s: %v (total %d), want %v", c.query, got.ids(), got.Total, c.want)
			}
			for _, h := range got.Items {
				if h.Score != nil || h.MatchedCapabilities != nil {
					t.Errorf("%s: score or matchedCapabilities without q: %+v", c.query, h)
				}
			}
		}
		// POST .../cards/search answers exactly as GET.
		r := e.do("POST", "/v1/tenants/acme/cards/search", alice, map[string]any{"protocols": []string{"http"}, "tags": []string{"code"}})
		expect(t, r, http.StatusOK)
		var a searchAnswer
		r.json(t, &a)
		if fmt.Sprint(a.ids()) != "[code-reviewer]" {
			t.Errorf("POST search: %v", a.ids())
		}
	})
}

func TestSearchRanking(t *testing.T) {
	forEachDialectAndIndex(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		alice := e.token("alice", "acme", false)
		for _, c := range searchCorpus() {
			expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, c), http.StatusCreated)
		}
		q := func(text string, extra ...string) searchAnswer {
			return e.search(alice, "acme", "q="+url.QueryEscape(text)+strings.Join(extra, ""))
		}
		// The code reviewer does it; the doc writer merely mentions "review".
		a := q("review pull request")
		if fmt.Sprint(a.ids()) != "[code-reviewer doc-writer]" || a.Total != 2 {
			t.Fatalf("review pull request: %v", a.ids())
		}
		// Scores are between 0 and 1 (docs/search.md; the index's tests check their values).
		if s := *a.Items[0].Score; s <= 0 || s > 1 || fmt.Sprint(a.Items[0].MatchedCapabilities) != "[review_pr]" {
			t.Fatalf("first hit %+v", a.Items[0])
		}
		if s := *a.Items[1].Score; s <= 0 || s >= *a.Items[0].Score || len(a.Items[1].MatchedCapabilities) != 0 {
			t.Fatalf("second hit %+v", a.Items[1])
		}
		// explain=true says, per result, what each word added; the adds sum to the score.
		if a.Items[0].Explain != nil {
			t.Fatalf("explained unasked: %+v", a.Items[0].Explain)
		}
		explained := q("review pull request", "&explain=true")
		for _, h := range explained.Items {
			sum := 0.0
			for _, w := range h.Explain.Words {
				sum += w.Adds
			}
			if math.Abs(sum-*h.Score) > 1e-9 || len(h.Explain.Words) != 3 {
				t.Fatalf("%s scored %v, explained %+v", h.Card.AgentID, *h.Score, h.Explain)
			}
		}
		if w := explained.Items[0].Explain.Words[1]; w.Word != "pull" || w.By != "word" || fmt.Sprint(w.Where) != "[capabilities[review_pr].description]" {
			t.Fatalf("code-reviewer's pull: %+v", w)
		}
		// Whole tokens: "cost" does not find "costume"; a compound is found whole and by its parts.
		if got := q("cost budget").ids(); fmt.Sprint(got) != "[budget-bot]" {
			t.Fatalf("cost budget: %v", got)
		}
		// As the word being typed, "cost" may be the start of "costume", but the whole word ranks
		// first.
		if a := q("cost"); fmt.Sprint(a.ids()) != "[budget-bot costume-shop]" {
			t.Fatalf("cost: %v", a.ids())
		}
		if got := q("cost_center").ids(); fmt.Sprint(got) != "[budget-bot]" {
			t.Fatalf("cost_center: %v", got)
		}
		// The word being typed matches as a prefix (3+ characters); earlier words do not.
		a = q("summar")
		if fmt.Sprint(a.ids()) != "[doc-writer]" || fmt.Sprint(a.Items[0].MatchedCapabilities) != "[summarize]" {
			t.Fatalf("summar: %v %+v", a.ids(), a.Items)
		}
		if got := q("summar, ").ids(); fmt.Sprint(got) != "[doc-writer]" {
			t.Fatalf("summar followed by punctuation: %v", got)
		}
		// doc-writer holds both words, the rarer "summarize" among them; Translator only "text".
		if got := q("summar text").ids(); fmt.Sprint(got) != "[doc-writer Translator]" {
			t.Fatalf("summar text: %v", got)
		}
		if got := q("su").ids(); len(got) != 0 {
			t.Fatalf("su: %v", got)
		}
		// A word counts for more in the name (3) than in a tag or a capability's name (2), for more
		// there than in a description (1), and once for each time it occurs.
		if got := q("budget").ids(); fmt.Sprint(got) != "[budget-bot]" {
			t.Fatalf("budget: %v", got)
		}
		if got := q("code").ids(); fmt.Sprint(got) != "[code-reviewer Translator]" {
			t.Fatalf("code (a tag of both, and code-reviewer's name): %v", got)
		}
		if got := q("translate text").ids(); fmt.Sprint(got) != "[Translator doc-writer]" {
			t.Fatalf("translate text: %v", got)
		}
		// Unicode is lowercased and split like ASCII.
		if got := q("ÜBERSETZER").ids(); fmt.Sprint(got) != "[Translator]" {
			t.Fatalf("unicode: %v", got)
		}
		// q combines with filters, and nothing matches nothing.
		if got := q("text", "&protocol=http").ids(); fmt.Sprint(got) != "[doc-writer]" {
			t.Fatalf("text+http: %v", got)
		}
		if a := q("zebra"); a.Total != 0 || len(a.Items) != 0 {
			t.Fatalf("zebra: %+v", a)
		}
	})
}

// TestSearchPagingUnderWrites pages through a result while other cards are inserted and deleted:
// no card shows twice, and none that matched throughout is skipped.
func TestSearchPagingUnderWrites(t *testing.T) {
	forEachDialectAndIndex(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		alice := e.token("alice", "acme", false)
		put := func(id, desc string) {
			c := sampleCard(id)
			c["description"] = desc
			expect(t, e.do("PUT", "/v1/tenants/acme/cards/"+id, alice, c), http.StatusCreated)
		}
		var stable []string
		for i := range 30 {
			id := fmt.Sprintf("agt-%02d", i)
			desc := "alpha"
			if i%3 == 0 {
				desc = "alpha beta" // ranks higher for "alpha beta"
			}
			put(id, desc)
			stable = append(stable, id)
		}
		for _, query := range []string{"limit=4", "limit=4&q=alpha+beta"} {
			seen := map[string]int{}
			cursor := ""
			for page := 0; ; page++ {
				if page > 40 {
					t.Fatal("paging does not end")
				}
				// Writes between pages: new cards before and after the cursor, and removals of
				// cards that were not in the result at the start.
				put(fmt.Sprintf("agt-%02d-new-%d", page%30, page), "alpha beta")
				put(fmt.Sprintf("zz-%d", page), "alpha")
				if page > 0 {
					expect(t, e.do("DELETE", fmt.Sprintf("/v1/tenants/acme/cards/zz-%d", page-1), alice, nil), http.StatusNoContent)
				}
				path := query
				if cursor != "" {
					path += "&cursor=" + cursor
				}
				a := e.search(alice, "acme", path)
				for _, id := range a.ids() {
					seen[id]++
				}
				if a.NextCursor == "" {
					break
				}
				cursor = a.NextCursor
			}
			for id, n := range seen {
				if n > 1 {
					t.Errorf("%s: %s shown %d times", query, id, n)
				}
			}
			for _, id := range stable {
				if seen[id] != 1 {
					t.Errorf("%s: %s skipped", query, id)
				}
			}
			// Clean up this round's extra cards for the next query.
			for _, h := range e.search(alice, "acme", "limit=100").Items {
				if !slices.Contains(stable, h.Card.AgentID) {
					expect(t, e.do("DELETE", "/v1/tenants/acme/cards/"+h.Card.AgentID, alice, nil), http.StatusNoContent)
				}
			}
		}
	})
}

func TestSearchBadInput(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		alice := e.token("alice", "acme", false)
		for i := range 3 {
			expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, sampleCard(fmt.Sprint("agt", i))), http.StatusCreated)
		}
		other := e.search(alice, "acme", "limit=1&protocol=http").NextCursor
		if other == "" {
			t.Fatal("no cursor")
		}
		for _, q := range []string{"limit=0", "limit=1000", "limit=-1", "protocol=", "tag=", "capability=", "tag=x&tag=",
			"resource=not-a-uri", "resource=" + url.QueryEscape("/relative/path"), "cursor=" + other, "cursor=" + other + "&protocol=http&limit=2&q=x",
			"q=" + url.QueryEscape("!!! ..."), "name=a&name=b", "q=" + strings.Repeat("x", 2000), "q=x&explain=yes", "q=x&explain=true&explain=true"} {
			r := e.do("GET", "/v1/tenants/acme/cards?"+q, alice, nil)
			expect(t, r, http.StatusBadRequest, "invalid")
		}
		// The same cursor with its own query works.
		expect(t, e.do("GET", "/v1/tenants/acme/cards?limit=1&protocol=http&cursor="+other, alice, nil), http.StatusOK)
		for _, body := range []any{map[string]any{"limit": 0}, map[string]any{"protocols": "http"}, map[string]any{"colour": 1}, `{"q":`, map[string]any{"q": "x", "explain": "yes"}} {
			r := e.do("POST", "/v1/tenants/acme/cards/search", alice, body)
			if r.status != http.StatusBadRequest {
				t.Fatalf("POST search %v: %d %s", body, r.status, r.body)
			}
			r.errCode(t)
		}
	})
}

// TestSearchIsolation: no search, however phrased, returns another tenant's card.
func TestSearchIsolation(t *testing.T) {
	forEachDialectAndIndex(t, func(t *testing.T, e *env) {
		e.mkTenant("tenant-a", "alice")
		e.mkTenant("tenant-b", "bob")
		alice, bob := e.token("alice", "tenant-a", false), e.token("bob", "tenant-b", false)
		secret := sampleCard("secret-agent")
		secret["name"], secret["description"], secret["tags"] = "Zanzibar", "zanzibar only in tenant a", []string{"zanzibar"}
		expect(t, e.do("POST", "/v1/tenants/tenant-a/cards", alice, secret), http.StatusCreated)
		expect(t, e.do("POST", "/v1/tenants/tenant-b/cards", bob, sampleCard("b-agent")), http.StatusCreated)
		for _, q := range []string{"", "q=zanzibar", "name=zanzibar", "tag=zanzibar", "capability=review_pr", "q=review"} {
			a := e.search(bob, "tenant-b", q)
			for _, id := range a.ids() {
				if id != "b-agent" {
					t.Fatalf("%q from tenant-b returned %s", q, id)
				}
			}
			expect(t, e.do("GET", "/v1/tenants/tenant-a/cards?"+q, bob, nil), http.StatusNotFound, "not_found")
		}
		if a := e.search(alice, "tenant-a", "q=zanzibar"); a.Total != 1 {
			t.Fatalf("own search: %+v", a)
		}
	})
}

// TestSearchOnlyReadableCards: with a per-card grant, a search holds exactly the cards the
// caller may read, and the total counts only those.
func TestSearchOnlyReadableCards(t *testing.T) {
	forEachDialectAndIndex(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		alice := e.token("alice", "acme", false)
		for _, id := range []string{"agt1", "agt2", "agt3"} {
			expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, sampleCard(id)), http.StatusCreated)
		}
		e.grantRule(t, "acme", "carol", "cards/agt2", "cards:read", "allow")
		carol := e.token("carol", "acme", false)
		for _, q := range []string{"", "q=review", "protocol=http"} {
			a := e.search(carol, "acme", q)
			if fmt.Sprint(a.ids()) != "[agt2]" || a.Total != 1 {
				t.Fatalf("%q: %v total %d", q, a.ids(), a.Total)
			}
		}
		// A reader except for one denied card.
		expect(t, e.do("POST", "/v1/tenants/acme/roles", alice, map[string]string{"subject": "rita", "role": "reader"}), http.StatusCreated)
		e.grantRule(t, "acme", "rita", "cards/agt1", "cards:read", "deny")
		rita := e.token("rita", "acme", false)
		if a := e.search(rita, "acme", "q=review"); fmt.Sprint(a.ids()) != "[agt2 agt3]" || a.Total != 2 {
			t.Fatalf("reader with a deny: %v %d", a.ids(), a.Total)
		}
	})
}

// TestSearchPagingUnderConcurrentWrites pages through a result while another client inserts and
// deletes matching cards at the same time: between every two pages the writer has inserted and
// deleted at least one card (counted, so the test cannot pass without writes), no card shows
// twice, and every card that matched throughout shows exactly once.
func TestSearchPagingUnderConcurrentWrites(t *testing.T) {
	forEachDialectAndIndex(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		alice := e.token("alice", "acme", false)
		var stable []string
		for i := range 40 {
			id := fmt.Sprintf("s-%02d", i)
			c := sampleCard(id)
			c["description"] = "alpha"
			expect(t, e.do("PUT", "/v1/tenants/acme/cards/"+id, alice, c), http.StatusCreated)
			stable = append(stable, id)
		}
		w := startPagingWriter(e, alice)
		defer w.stop()
		w.writesAfter(t, 0)
		for _, query := range []string{"limit=3", "limit=3&q=alpha+beta"} {
			pageThroughWrites(t, e, alice, query, w, stable)
		}
		w.stop()
		if w.err != nil {
			t.Fatal(w.err)
		}
	})
}

// pagingWriter inserts and deletes, in turn, cards matching the searches of
// TestSearchPagingUnderConcurrentWrites, until stopped or a write fails.
type pagingWriter struct {
	writes atomic.Int64  // writes answered with success
	err    error         // why the writer stopped early; read after done
	halt   chan struct{} // closed to stop the writer
	done   chan struct{} // closed when the writer has stopped
	halted func()        // closes halt and waits for done, once
}

// stop stops the writer and waits for it.
func (w *pagingWriter) stop() { w.halted() }

func startPagingWriter(e *env, alice string) *pagingWriter {
	w := &pagingWriter{halt: make(chan struct{}), done: make(chan struct{})}
	w.halted = sync.OnceFunc(func() { close(w.halt); <-w.done })
	go func() {
		defer close(w.done)
		for i := 0; ; i++ {
			select {
			case <-w.halt:
				return
			default:
			}
			// Cards that sort before, between and after the stable ones, matching the query.
			id := fmt.Sprintf("%s-w%03d", []string{"a", "s-10", "z"}[i%3], i)
			c := sampleCard(id)
			c["description"] = "alpha beta"
			body, _ := json.Marshal(c)
			for _, rq := range []struct{ method, body string }{{"PUT", string(body)}, {"DELETE", ""}} {
				status, err := send(e, rq.method, "/v1/tenants/acme/cards/"+id, alice, rq.body)
				if err == nil && status >= 300 {
					err = fmt.Errorf("%s %s: status %d", rq.method, id, status)
				}
				if err != nil {
					w.err = err
					return
				}
				w.writes.Add(1)
			}
		}
	}()
	return w
}

// writesAfter waits until the writer has made two more writes than n (an insert and a delete,
// as it alternates), failing if it stopped.
func (w *pagingWriter) writesAfter(t *testing.T, n int64) {
	t.Helper()
	webtest.Eventually(t, 10*time.Second, "two more writes", func() bool {
		select {
		case <-w.done:
			t.Fatalf("the writer stopped after %d writes: %v", w.writes.Load(), w.err)
		default:
		}
		return w.writes.Load() >= n+2
	})
}

// pageThroughWrites pages through the search query, waiting for the writer's next two writes
// before each page after the first, and checks that they were made, that no card showed twice,
// and that each of the stable cards showed once.
func pageThroughWrites(t *testing.T, e *env, alice, query string, w *pagingWriter, stable []string) {
	seen := map[string]int{}
	cursor := ""
	first := w.writes.Load()
	pages := 0
	for ; ; pages++ {
		if pages > 100 {
			t.Fatal("paging does not end")
		}
		path := query
		if cursor != "" {
			w.writesAfter(t, w.writes.Load())
			path += "&cursor=" + cursor
		}
		a := e.search(alice, "acme", path)
		for _, id := range a.ids() {
			seen[id]++
		}
		if a.NextCursor == "" {
			break
		}
		cursor = a.NextCursor
	}
	during := w.writes.Load() - first
	if during < 2*int64(pages) {
		t.Errorf("%s: %d writes during %d pages", query, during, pages+1)
	}
	for id, n := range seen {
		if n > 1 {
			t.Errorf("%s: %s shown %d times", query, id, n)
		}
	}
	for _, id := range stable {
		if seen[id] != 1 {
			t.Errorf("%s: %s shown %d times, want once", query, id, seen[id])
		}
	}
}

// TestReadFilterAgreesWithCasbin: the per-card read check searches use, gathered from the
// subject's rules once, answers exactly as a casbin evaluation per card, for random policies of
// the subject and of its roles, with allows and denies.
func TestReadFilterAgreesWithCasbin(t *testing.T) {
	e := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	ids := []string{"a1", "a2", "b1", "b2", "c", "cards", "x.y", "Z"}
	objects := []string{"cards/*", "cards/a1", "cards/a2", "cards/b1", "cards/Z", "cards/x.y", "cards/*/capabilities/*", "policies"}
	r := rand.New(rand.NewPCG(3, 4))
	for round := range 30 {
		tenant := fmt.Sprintf("t%d", round)
		e.mkTenant(tenant, "alice")
		if r.IntN(2) == 0 {
			expect(t, e.do("POST", "/v1/tenants/"+tenant+"/roles", e.admin(), map[string]string{"subject": "sam", "role": "reader"}), http.StatusCreated)
		}
		for range 1 + r.IntN(5) {
			sub := []string{"sam", "role:reader", "someone"}[r.IntN(3)]
			eft := []string{"allow", "deny"}[r.IntN(2)]
			act := []string{"cards:read", "cards:read", "cards:write"}[r.IntN(3)]
			e.grantRule(t, tenant, sub, objects[r.IntN(len(objects))], act, eft)
		}
		ctx := authz.WithPrincipal(context.Background(), authz.Principal{Subject: "sam", Tenant: tenant})
		readable, err := e.authz.ReadFilter(ctx, tenant)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			err := e.authz.Check(ctx, tenant, authz.CardObject(id), authz.ActCardsRead)
			if err != nil && !errors.Is(err, authz.ErrForbidden) {
				t.Fatal(err)
			}
			want := err == nil // casbin's own answer
			if got := readable == nil || readable(id); got != want {
				t.Fatalf("round %d, card %s: read filter %v, casbin %v", round, id, got, want)
			}
		}
	}
}

// TestMalformedQueryAndWrongMethod: a query string that does not parse is a 400 naming the
// parameter, not a search that silently dropped it; a known path with a wrong method is a 405
// with Allow, not a 404.
func TestMalformedQueryAndWrongMethod(t *testing.T) {
	e := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	e.mkTenant("acme", "alice")
	alice := e.token("alice", "acme", false)
	expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, sampleCard("agt1")), http.StatusCreated)
	for q, name := range map[string]string{
		"tag=%zz":                 "tag",
		"protocol=a2a&tag=fin%zz": "tag",
		"q=review;x":              "q",
		"limit=%zz":               "limit",
		"ta%g=x":                  "ta%g",
	} {
		r := e.do("GET", "/v1/tenants/acme/cards?"+q, alice, nil)
		expect(t, r, http.StatusBadRequest, "invalid")
		if !strings.Contains(string(r.body), `\"`+name+`\"`) {
			t.Errorf("?%s: the error does not name %q: %s", q, name, r.body)
		}
	}
	// Encoded, the same characters are plain values.
	expect(t, e.do("GET", "/v1/tenants/acme/cards?q=review%3Bx&tag=fin%25zz", alice, nil), http.StatusOK)
	expect(t, e.do("GET", "/a2a/acme/agents?x=%zz", "", nil), http.StatusBadRequest, "invalid")

	for _, c := range []struct{ method, path, allow string }{
		{"PUT", "/v1/tenants/acme/cards", "GET, POST"},
		{"DELETE", "/v1/tenants", "GET, POST"},
		{"POST", "/v1/tenants/acme/cards/agt1", "DELETE, GET, PATCH, PUT"},
		{"POST", "/a2a/acme/agents", "GET"},
	} {
		r := e.do(c.method, c.path, alice, map[string]any{})
		expect(t, r, http.StatusMethodNotAllowed, "method_not_allowed")
		allow := strings.Split(r.header.Get("Allow"), ", ")
		for _, m := range strings.Split(c.allow, ", ") {
			if !slices.Contains(allow, m) {
				t.Errorf("%s %s: Allow %q does not list %s", c.method, c.path, r.header.Get("Allow"), m)
			}
		}
		if slices.Contains(allow, c.method) {
			t.Errorf("%s %s: Allow %q lists the refused method", c.method, c.path, r.header.Get("Allow"))
		}
	}
	// Unknown paths stay 404.
	expect(t, e.do("GET", "/v1/nothing", alice, nil), http.StatusNotFound, "not_found")

	// Messages name the API's fields, not Go's.
	r := e.do("POST", "/v1/tenants/acme/cards/search", alice, map[string]any{"protocols": "a2a"})
	expect(t, r, http.StatusBadRequest, "invalid")
	if !strings.Contains(string(r.body), `"protocols: expected an array`) {
		t.Errorf("type error: %s", r.body)
	}
	r = e.do("DELETE", "/v1/tenants/acme/policies", alice, map[string]string{"subject": "bob", "object": "cards/*", "action": "delegate", "effect": "deny"})
	expect(t, r, http.StatusNotFound, "not_found")
	if !strings.Contains(string(r.body), `subject \"bob\", object \"cards/*\"`) {
		t.Errorf("missing policy: %s", r.body)
	}
}
