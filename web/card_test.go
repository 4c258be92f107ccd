package web_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/web/api"
)

type cardJSON struct {
	AgentID      string            `json:"agentId"`
	Name         string            `json:"name"`
	Description  string            `json:"description"`
	Version      string            `json:"version"`
	Protocols    []string          `json:"protocols"`
	Tags         []string          `json:"tags"`
	Metadata     map[string]any    `json:"metadata"`
	Visibility   string            `json:"visibility"`
	ID           string            `json:"id"`
	Revision     int64             `json:"revision"`
	CreatedAt    string            `json:"createdAt"`
	UpdatedAt    string            `json:"updatedAt"`
	Capabilities []json.RawMessage `json:"capabilities"`
	Liveness     *cards.Liveness   `json:"liveness"`
}

// hitJSON is one item of a search answer.
type hitJSON struct {
	Card                cardJSON         `json:"card"`
	Score               *float64         `json:"score"`
	MatchedCapabilities []string         `json:"matchedCapabilities"`
	Explain             *api.Explanation `json:"explain"`
}

func TestCardLifecycle(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		alice := e.token("alice", "acme", false)
		base := "/v1/tenants/acme/cards"

		r := e.do("POST", base, alice, sampleCard("agt_abc123"))
		expect(t, r, http.StatusCreated)
		if r.header.Get("Location") != base+"/agt_abc123" || r.header.Get("ETag") != `"1"` {
			t.Fatalf("Location %q ETag %q", r.header.Get("Location"), r.header.Get("ETag"))
		}
		var c cardJSON
		r.json(t, &c)
		if c.Revision != 1 || c.ID == "" || c.Visibility != "tenant" || c.CreatedAt == "" || c.CreatedAt != c.UpdatedAt {
			t.Fatalf("created card %+v", c)
		}
		// A card is answered as encoding/json writes it, byte for byte.
		var whole cards.Card
		r.json(t, &whole)
		if std, err := json.Marshal(whole); err != nil || string(append(std, '\n')) != string(r.body) {
			t.Fatalf("the card's answer is not encoding/json's (%v):\n%s\n%s", err, r.body, std)
		}
		expect(t, e.do("POST", base, alice, sampleCard("agt_abc123")), http.StatusConflict, "conflict")

		r = e.do("GET", base+"/agt_abc123", alice, nil)
		expect(t, r, http.StatusOK)
		if r.header.Get("ETag") != `"1"` {
			t.Fatalf("ETag %q", r.header.Get("ETag"))
		}
		expect(t, e.do("GET", base+"/agt_abc123", alice, nil, "If-None-Match", `"1"`), http.StatusNotModified)
		expect(t, e.do("GET", base+"/agt_abc123", alice, nil, "If-None-Match", `"7"`), http.StatusOK)

		// PATCH changes only the fields sent; null removes a field.
		r = e.do("PATCH", base+"/agt_abc123", alice, map[string]any{"description": "Now also reviews docs.", "metadata": nil},
			"Content-Type", "application/merge-patch+json", "If-Match", `"1"`)
		expect(t, r, http.StatusOK)
		var p cardJSON
		r.json(t, &p)
		if p.Revision != 2 || p.Description != "Now also reviews docs." || p.Metadata != nil ||
			p.Name != c.Name || p.Version != "1.0.0" || len(p.Capabilities) != 1 || p.ID != c.ID ||
			p.CreatedAt != c.CreatedAt || p.UpdatedAt == c.UpdatedAt || r.header.Get("ETag") != `"2"` {
			t.Fatalf("patched card %+v", p)
		}

		// PUT replaces the whole card; on a new agent it creates.
		doc := sampleCard("agt_abc123")
		doc["name"] = "Reviewer v2"
		delete(doc, "tags")
		r = e.do("PUT", base+"/agt_abc123", alice, doc, "If-Match", `"2"`)
		expect(t, r, http.StatusOK)
		r.json(t, &p)
		if p.Revision != 3 || p.Name != "Reviewer v2" || len(p.Tags) != 0 || p.Description != c.Description || p.ID != c.ID {
			t.Fatalf("replaced card %+v", p)
		}
		r = e.do("PUT", base+"/agt_new", alice, sampleCard("agt_new"))
		expect(t, r, http.StatusCreated)
		if r.header.Get("Location") != base+"/agt_new" {
			t.Fatalf("Location %q", r.header.Get("Location"))
		}
		noAgentID := sampleCard("")
		delete(noAgentID, "agentId")
		r = e.do("PUT", base+"/agt_new", alice, noAgentID)
		expect(t, r, http.StatusOK)
		r.json(t, &p)
		if p.AgentID != "agt_new" || p.Revision != 2 {
			t.Fatalf("put without agentId %+v", p)
		}

		// Server-owned fields are ignored on input.
		doc = sampleCard("agt_srv")
		doc["id"], doc["revision"], doc["createdAt"] = "mine", 99, "1999-01-01T00:00:00Z"
		r = e.do("POST", base, alice, doc)
		expect(t, r, http.StatusCreated)
		r.json(t, &p)
		if p.ID == "mine" || p.Revision != 1 || strings.HasPrefix(p.CreatedAt, "1999") {
			t.Fatalf("server fields taken from input: %+v", p)
		}

		expect(t, e.do("DELETE", base+"/agt_srv", alice, nil, "If-Match", `"5"`), http.StatusPreconditionFailed, "precondition_failed")
		expect(t, e.do("DELETE", base+"/agt_srv", alice, nil, "If-Match", `"1"`), http.StatusNoContent)
		expect(t, e.do("DELETE", base+"/agt_srv", alice, nil), http.StatusNotFound, "not_found")
		expect(t, e.do("GET", base+"/agt_srv", alice, nil), http.StatusNotFound, "not_found")
		expect(t, e.do("PATCH", base+"/agt_srv", alice, map[string]any{"name": "x"}), http.StatusNotFound, "not_found")
	})
}

func TestCardListPaging(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		alice := e.token("alice", "acme", false)
		// Mixed case: byte order puts upper case first on every database.
		ids := []string{"b-7", "B-2", "a.1", "A_9", "c", "agent-10", "agent-2", "Z", "z", "0x"}
		for _, id := range ids {
			expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, sampleCard(id)), http.StatusCreated)
		}
		want := []string{"0x", "A_9", "B-2", "Z", "a.1", "agent-10", "agent-2", "b-7", "c", "z"}
		var got []string
		cursor := ""
		for pages := 0; ; pages++ {
			if pages > len(ids) {
				t.Fatal("paging does not end")
			}
			path := "/v1/tenants/acme/cards?limit=3"
			if cursor != "" {
				path += "&cursor=" + cursor
			}
			r := e.do("GET", path, alice, nil)
			expect(t, r, http.StatusOK)
			var page struct {
				Total      int       `json:"total"`
				Items      []hitJSON `json:"items"`
				NextCursor *string   `json:"nextCursor"`
			}
			r.json(t, &page)
			if page.Total != len(ids) {
				t.Fatalf("total %d", page.Total)
			}
			for _, h := range page.Items {
				got = append(got, h.Card.AgentID)
			}
			if page.NextCursor == nil {
				break
			}
			cursor = *page.NextCursor
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("order %v, want %v", got, want)
		}

		r := e.do("GET", "/v1/tenants/acme/cards", alice, nil)
		var page struct {
			Items      []hitJSON `json:"items"`
			NextCursor *string   `json:"nextCursor"`
		}
		r.json(t, &page)
		if len(page.Items) != 10 || page.NextCursor != nil {
			t.Fatalf("default page: %d items, next %v", len(page.Items), page.NextCursor)
		}
		for _, q := range []string{"limit=0", "limit=101", "limit=x", "limit=", "cursor=", "cursor=%21%21", "cursor=eyJrIjoib3RoZXIiLCJhIjoieCJ9", "protocol=", "colour=red", "limit=1&limit=2"} {
			expect(t, e.do("GET", "/v1/tenants/acme/cards?"+q, alice, nil), http.StatusBadRequest, "invalid")
		}
	})
}

// TestCardBadInput sends every class of bad input and checks the status, the error code, and
// that the stored card did not change.
func TestCardBadInput(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		alice := e.token("alice", "acme", false)
		base := "/v1/tenants/acme/cards"
		expect(t, e.do("POST", base, alice, sampleCard("agt1")), http.StatusCreated)
		before := e.getCard("acme", "agt1")

		with := func(mod func(map[string]any)) map[string]any {
			c := sampleCard("agt1")
			mod(c)
			return c
		}
		capability := func(name string) map[string]any { return map[string]any{"name": name} }
		many := func(n int, f func(i int) any) []any {
			out := make([]any, n)
			for i := range out {
				out[i] = f(i)
			}
			return out
		}
		bad := []struct {
			name   string
			body   any
			status int
			code   string
		}{
			{"malformed JSON", `{"agentId": "agt1", "name": `, 400, "malformed_json"},
			{"not an object", `["agt1"]`, 400, "malformed_json"},
			{"trailing data", `{"agentId":"agt1","name":"x"} {}`, 400, "malformed_json"},
			{"empty body", ``, 400, "malformed_json"},
			{"name wrong type", with(func(c map[string]any) { c["name"] = 42 }), 400, "invalid"},
			{"capabilities not an array", with(func(c map[string]any) { c["capabilities"] = "review" }), 400, "invalid"},
			{"unknown top-level fields", with(func(c map[string]any) { c["owner"] = "x"; c["color"] = 1 }), 400, "invalid"},
			{"unknown nested field", with(func(c map[string]any) { c["authRequirements"] = map[string]any{"type": "none", "x": 1} }), 400, "invalid"},
			{"missing name", with(func(c map[string]any) { delete(c, "name") }), 400, "invalid"},
			{"bad agentId", with(func(c map[string]any) { c["agentId"] = "-x" }), 400, "invalid"},
			{"agentId with slash", with(func(c map[string]any) { c["agentId"] = "a/b" }), 400, "invalid"},
			{"relative endpoint", with(func(c map[string]any) { c["endpoint"] = "/task" }), 400, "invalid"},
			{"ftp endpoint", with(func(c map[string]any) { c["endpoint"] = "ftp://agents.example.com/x" }), 400, "invalid"},
			{"endpoint with user-info", with(func(c map[string]any) { c["endpoint"] = "https://u:p@agents.example.com/x" }), 400, "invalid"},
			{"endpoint without host", with(func(c map[string]any) { c["endpoint"] = "https:///x" }), 400, "invalid"},
			{"uppercase protocol", with(func(c map[string]any) { c["protocols"] = []string{"A2A"} }), 400, "invalid"},
			{"duplicate capability", with(func(c map[string]any) { c["capabilities"] = []any{capability("x"), capability("x")} }), 400, "invalid"},
			{"bad capability name", with(func(c map[string]any) { c["capabilities"] = []any{capability("a b")} }), 400, "invalid"},
			{"schema not an object", with(func(c map[string]any) {
				c["capabilities"] = []any{map[string]any{"name": "x", "inputSchema": []int{1}}}
			}), 400, "invalid"},
			{"bad auth type", with(func(c map[string]any) { c["authRequirements"] = map[string]any{"type": "basic"} }), 400, "invalid"},
			{"bad visibility", with(func(c map[string]any) { c["visibility"] = "everyone" }), 400, "invalid"},
			{"bad resource uri", with(func(c map[string]any) { c["resources"] = []any{map[string]any{"uri": "data"}} }), 400, "invalid"},
			{"too many capabilities", with(func(c map[string]any) {
				c["capabilities"] = many(257, func(i int) any { return capability(fmt.Sprint("c", i)) })
			}), 400, "invalid"},
			{"too many tags", with(func(c map[string]any) { c["tags"] = many(65, func(i int) any { return fmt.Sprint("t", i) }) }), 400, "invalid"},
			{"document over 256 KiB", with(func(c map[string]any) {
				c["description"] = ""
				c["metadata"] = map[string]any{"blob": strings.Repeat("x", 300<<10)}
			}), 413, "too_large"},
			{"body over the limit", with(func(c map[string]any) { c["metadata"] = map[string]any{"blob": strings.Repeat("x", 2<<20)} }), 413, "too_large"},
		}
		for _, c := range bad {
			t.Run(c.name, func(t *testing.T) {
				expect(t, e.do("PUT", base+"/agt1", alice, c.body), c.status, c.code)
				if c.name != "bad agentId" && c.name != "agentId with slash" {
					expect(t, e.do("POST", base, alice, c.body), c.status, c.code)
				}
			})
		}

		// Merge patches go through the same checks.
		for _, patch := range []any{`{"name": `, map[string]any{"endpoint": "nope"}, map[string]any{"agentId": "other"},
			map[string]any{"capabilities": map[string]any{"x": 1}}, map[string]any{"zzz": 1}, `[]`} {
			r := e.do("PATCH", base+"/agt1", alice, patch, "Content-Type", "application/merge-patch+json")
			if r.status != http.StatusBadRequest {
				t.Fatalf("patch %v: %d %s", patch, r.status, r.body)
			}
			r.errCode(t)
		}
		expect(t, e.do("PATCH", base+"/agt1", alice, `{"name":"x"}`, "Content-Type", "text/plain"), 415, "unsupported_media_type")
		expect(t, e.do("POST", base, alice, `{"name":"x"}`, "Content-Type", "application/xml"), 415, "unsupported_media_type")
		expect(t, e.do("PUT", base+"/agt1", alice, sampleCard("agt1"), "If-Match", `"9"`), 412, "precondition_failed")
		expect(t, e.do("PUT", base+"/agt1", alice, sampleCard("agt1"), "If-Match", `W/"1"`), 412, "precondition_failed")
		expect(t, e.do("PUT", base+"/agt1", alice, sampleCard("agt1"), "If-None-Match", `*`), 412, "precondition_failed")
		expect(t, e.do("PATCH", base+"/agt1", alice, map[string]any{"name": "x"}, "If-Match", `"0"`), 412, "precondition_failed")
		expect(t, e.do("DELETE", base+"/agt1", alice, nil, "If-Match", `"2"`), 412, "precondition_failed")
		expect(t, e.do("PUT", base+"/agt-missing", alice, sampleCard("agt-missing"), "If-Match", `"1"`), 412, "precondition_failed")
		expect(t, e.do("GET", base+"/agt-missing", alice, nil), 404, "not_found")
		expect(t, e.do("POST", "/v1/tenants/nope/cards", e.admin(), sampleCard("agt1")), 404, "not_found")
		expect(t, e.do("GET", "/v1/tenants/Not_A_Slug/cards", e.admin(), nil), 404, "not_found")

		after := e.getCard("acme", "agt1")
		if !bytes.Equal(before.body, after.body) {
			t.Fatalf("refused writes changed the card:\nbefore %s\nafter  %s", before.body, after.body)
		}
	})
}

// TestConcurrentPatchSameRevision: of 20 writers with the same If-Match exactly one wins.
func TestConcurrentPatchSameRevision(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		alice := e.token("alice", "acme", false)
		expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, sampleCard("agt1")), http.StatusCreated)
		const writers = 20
		statuses := make([]int, writers)
		// The writers report here, not through t: t.Fatal must not be called off the test's
		// goroutine, where it would end only the writer and hide the failure.
		errs := make(chan error, writers)
		var wg sync.WaitGroup
		for i := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				body := fmt.Sprintf(`{"description": "writer %d"}`, i)
				status, err := send(e, "PATCH", "/v1/tenants/acme/cards/agt1", alice, body, "If-Match", `"1"`)
				if err != nil {
					errs <- fmt.Errorf("writer %d: %w", i, err)
				}
				statuses[i] = status
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		counts := map[int]int{}
		winner := -1
		for i, s := range statuses {
			counts[s]++
			if s == http.StatusOK {
				winner = i
			}
		}
		if counts[200] != 1 || counts[412] != writers-1 {
			t.Fatalf("statuses %v", counts)
		}
		var c cardJSON
		e.getCard("acme", "agt1").json(t, &c)
		if c.Revision != 2 || c.Description != fmt.Sprint("writer ", winner) {
			t.Fatalf("revision %d, description %q after writer %d won alone", c.Revision, c.Description, winner)
		}
	})
}

// send makes one request and returns its status, or an error instead of failing the test, so
// that goroutines other than the test's can use it.
func send(e *env, method, path, token, body string, headers ...string) (int, error) {
	req, err := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := e.srv.Client().Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	if _, err := io.Copy(io.Discard, res.Body); err != nil {
		return 0, fmt.Errorf("%s %s: read the answer: %w", method, path, err)
	}
	return res.StatusCode, nil
}

// TestETagsNeverRepeat: a card registered again under an agent id whose card was deleted goes on
// from the deleted card's revision, so an ETag taken from the deleted card matches nothing: a
// conditional GET answers the new card, and a conditional write made for the old one is refused.
func TestETagsNeverRepeat(t *testing.T) {
	forEachDialectAndIndex(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		alice := e.token("alice", "acme", false)
		base := "/v1/tenants/acme/cards"
		expect(t, e.do("POST", base, alice, sampleCard("geo")), http.StatusCreated)
		expect(t, e.do("PATCH", base+"/geo", alice, map[string]any{"description": "second"}, "If-Match", `"1"`), http.StatusOK)
		expect(t, e.do("DELETE", base+"/geo", alice, nil), http.StatusNoContent)
		for i, register := range []func() response{
			func() response { return e.do("POST", base, alice, sampleCard("geo")) },
			func() response { return e.do("PUT", base+"/geo", alice, sampleCard("geo")) },
		} {
			r := register()
			expect(t, r, http.StatusCreated)
			var c struct{ Revision int64 }
			r.json(t, &c)
			want := int64(3 + 2*i) // after 2, then after the PATCH below and the delete
			if c.Revision != want || r.header.Get("ETag") != fmt.Sprintf(`"%d"`, want) {
				t.Fatalf("registered again: revision %d, ETag %s; want %d", c.Revision, r.header.Get("ETag"), want)
			}
			for _, old := range []string{`"1"`, `"2"`} {
				expect(t, e.do("GET", base+"/geo", alice, nil, "If-None-Match", old), http.StatusOK)
				expect(t, e.do("PATCH", base+"/geo", alice, map[string]any{"description": "for the old card"}, "If-Match", old),
					http.StatusPreconditionFailed, "precondition_failed")
			}
			expect(t, e.do("GET", base+"/geo", alice, nil, "If-None-Match", fmt.Sprintf(`"%d"`, want)), http.StatusNotModified)
			expect(t, e.do("PATCH", base+"/geo", alice, map[string]any{"description": "new"}, "If-Match", fmt.Sprintf(`"%d"`, want)), http.StatusOK)
			expect(t, e.do("DELETE", base+"/geo", alice, nil), http.StatusNoContent)
		}
	})
}

// TestWriteAnswersAsGet: the answer to POST, PUT, PATCH and a batch registration is the card as
// the GET that follows answers it, byte for byte, liveness included (unknown for a new card,
// online with its last heartbeat after one), on every database.
func TestWriteAnswersAsGet(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		alice := e.token("alice", "acme", false)
		get := func(id string) string {
			r := e.do("GET", "/v1/tenants/acme/cards/"+id, alice, nil)
			expect(t, r, http.StatusOK)
			return string(r.body)
		}
		same := func(what string, r response, status int, id string) {
			t.Helper()
			expect(t, r, status)
			if got, want := string(r.body), get(id); got != want || !strings.Contains(got, `"liveness":`) {
				t.Errorf("%s answered\n%s\nthe GET after\n%s", what, got, want)
			}
		}
		same("POST", e.do("POST", "/v1/tenants/acme/cards", alice, sampleCard("a1")), http.StatusCreated, "a1")
		same("PUT creating", e.do("PUT", "/v1/tenants/acme/cards/a2", alice, sampleCard("a2")), http.StatusCreated, "a2")
		expect(t, e.do("POST", "/v1/tenants/acme/cards/a2/heartbeat", alice, nil), http.StatusOK)
		patched := e.do("PATCH", "/v1/tenants/acme/cards/a2", alice, map[string]any{"description": "changed"},
			"Content-Type", "application/merge-patch+json")
		same("PATCH after a heartbeat", patched, http.StatusOK, "a2")
		if !strings.Contains(string(patched.body), `"state":"online"`) {
			t.Errorf("PATCH after a heartbeat: %s", patched.body)
		}
		same("PUT replacing", e.do("PUT", "/v1/tenants/acme/cards/a2", alice, sampleCard("a2")), http.StatusOK, "a2")
		batch := e.do("POST", "/v1/tenants/acme/cards:batch", alice, []any{sampleCard("b1"), sampleCard("b2")})
		expect(t, batch, http.StatusCreated)
		var list struct{ Items []json.RawMessage }
		batch.json(t, &list)
		for i, id := range []string{"b1", "b2"} {
			if got, want := string(list.Items[i])+"\n", get(id); got != want {
				t.Errorf("batch item %d\n%s\nthe GET after\n%s", i, got, want)
			}
		}
	})
}
