package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"testing"

	"github.com/agentcards/agentcards/web/api"
	"github.com/agentcards/agentcards/web/client"
	"github.com/agentcards/agentcards/web/webtest"
)

// pagedSearch answers a search of five cards two to a page, by the cursor asked; failAt, when
// not "", is a cursor answered with a 400.
func pagedSearch(t *testing.T, failAt string) *webtest.Script {
	pages := map[string]string{
		"":   `{"total": 5, "items": [{"card": {"agentId": "a"}}, {"card": {"agentId": "b"}}], "nextCursor": "c1"}`,
		"c1": `{"total": 5, "items": [{"card": {"agentId": "c"}}, {"card": {"agentId": "d"}}], "nextCursor": "c2"}`,
		"c2": `{"total": 5, "items": [{"card": {"agentId": "e"}}]}`,
	}
	return webtest.StartScript(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		cursor := r.URL.Query().Get("cursor")
		if cursor == failAt && failAt != "" {
			webtest.Reply(w, http.StatusBadRequest, `{"error": {"code": "invalid", "message": "cursor: not a cursor of this list"}}`)
			return
		}
		webtest.Reply(w, http.StatusOK, pages[cursor])
	})
}

// TestPaging: the *All methods yield the items of page after page, asking each with the cursor
// the last gave and the same query, until a page has none; from a cursor given, from there. A
// caller that stops early stops the requests; a page refused ends the items with its error.
func TestPaging(t *testing.T) {
	ctx := context.Background()
	collect := func(c *client.Client, in api.CardsSearch, stopAfter int) ([]string, error) {
		var ids []string
		for h, err := range c.Cards.SearchAll(ctx, in) {
			if err != nil {
				return ids, err
			}
			if ids = append(ids, h.Card.AgentID); len(ids) == stopAfter {
				break
			}
			if len(ids) > 10 {
				t.Fatalf("more items than the pages hold: %v", ids)
			}
		}
		return ids, nil
	}
	targets := func(s *webtest.Script) []string {
		var out []string
		for _, r := range s.Requests() {
			out = append(out, r.Target)
		}
		return out
	}

	s := pagedSearch(t, "")
	ids, err := collect(newClient(t, s), api.CardsSearch{Q: "review", Limit: 2}, 0)
	if err != nil || !slices.Equal(ids, []string{"a", "b", "c", "d", "e"}) {
		t.Errorf("every page: %v, %v", ids, err)
	}
	if want := []string{"/v1/tenants/acme/cards?limit=2&q=review", "/v1/tenants/acme/cards?cursor=c1&limit=2&q=review",
		"/v1/tenants/acme/cards?cursor=c2&limit=2&q=review"}; !slices.Equal(targets(s), want) {
		t.Errorf("asked %q, want %q", targets(s), want)
	}

	s = pagedSearch(t, "")
	if ids, err := collect(newClient(t, s), api.CardsSearch{Cursor: "c1"}, 0); err != nil || !slices.Equal(ids, []string{"c", "d", "e"}) {
		t.Errorf("from cursor c1: %v, %v", ids, err)
	}

	s = pagedSearch(t, "")
	if ids, _ := collect(newClient(t, s), api.CardsSearch{}, 3); !slices.Equal(ids, []string{"a", "b", "c"}) || len(s.Requests()) != 2 {
		t.Errorf("stopped after 3: %v in %d requests, want a b c in 2", ids, len(s.Requests()))
	}

	s = pagedSearch(t, "c1")
	ids, err = collect(newClient(t, s), api.CardsSearch{}, 0)
	var ce *client.Error
	if !slices.Equal(ids, []string{"a", "b"}) || !errors.As(err, &ce) || ce.Code != "invalid" || len(s.Requests()) != 2 {
		t.Errorf("a page refused: %v, %v after %d requests", ids, err, len(s.Requests()))
	}

	// The audit trail pages the same way, with its own query.
	trail := webtest.StartScript(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		if r.URL.Query().Get("cursor") == "" {
			webtest.Reply(w, http.StatusOK, `{"items": [{"seq": 9, "action": "cards.update"}], "nextCursor": "s9"}`)
			return
		}
		webtest.Reply(w, http.StatusOK, `{"items": [{"seq": 4, "action": "cards.update"}]}`)
	})
	var seqs []int64
	for e, err := range newClient(t, trail).Audit.ListAll(ctx, api.AuditList{Action: "cards.update", Limit: 1}) {
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, e.Seq)
	}
	if !slices.Equal(seqs, []int64{9, 4}) || targets(trail)[1] != "/v1/tenants/acme/audit?action=cards.update&cursor=s9&limit=1" {
		t.Errorf("audit pages: %v, asked %q", seqs, targets(trail))
	}
}

// TestInProcess: WithHandler serves each request by the handler in process, as the server would
// over the network: the handler sees the request with its token and a remote address, an answer
// written without a status is a 200, and the first status written stands.
func TestInProcess(t *testing.T) {
	var seen []string
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, fmt.Sprintf("%s %s %s %t", r.Method, r.URL.RequestURI(), r.RemoteAddr, r.Header.Get("Authorization") != ""))
		var body []byte
		if r.Body != nil { // nil for a request without a body, unlike a server's requests
			body, _ = io.ReadAll(r.Body)
		}
		switch r.URL.Path {
		case "/v1/tenants/acme/cards/rev":
			_, _ = io.WriteString(w, `{"agentId": "rev", "revision": 2}`)
		case "/v1/tenants/acme/cards":
			w.WriteHeader(http.StatusCreated)
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write(body)
		default:
			http.NotFound(w, r)
		}
	})
	c, err := client.New("http://in-process", client.WithHandler(h), client.WithToken(aliceToken(t)))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if card, err := c.Cards.Get(ctx, api.CardRef{AgentID: "rev"}); err != nil || card.AgentID != "rev" || card.Revision != 2 {
		t.Errorf("a 200 without WriteHeader: %+v, %v", card, err)
	}
	if card, err := c.Cards.Register(ctx, api.CardsRegister{CardInput: api.CardInput{AgentID: "new", Name: "N"}}); err != nil || card.AgentID != "new" {
		t.Errorf("a 201 then a 500 written: %+v, %v; want the 201", card, err)
	}
	var ce *client.Error
	if _, err := c.Cards.Get(ctx, api.CardRef{AgentID: "gone"}); !errors.As(err, &ce) || ce.Status != http.StatusNotFound {
		t.Errorf("a 404: %v", err)
	}
	want := []string{"GET /v1/tenants/acme/cards/rev 127.0.0.1:0 true", "POST /v1/tenants/acme/cards 127.0.0.1:0 true",
		"GET /v1/tenants/acme/cards/gone 127.0.0.1:0 true"}
	if !slices.Equal(seen, want) {
		t.Errorf("the handler saw %q, want %q", seen, want)
	}
}

// TestWatchStale: a context from WatchStale notes the service's mark of an answer made from
// memory while its database did not answer; later answers without the mark keep the note of the
// last one that had it. Without WatchStale the mark is ignored.
func TestWatchStale(t *testing.T) {
	s := webtest.StartScript(t, func(w http.ResponseWriter, _ *http.Request, n int) {
		if n == 1 {
			webtest.Reply(w, http.StatusOK, `{}`, "X-Agentcards-Stale", "database unreachable since 10:00:00Z")
			return
		}
		webtest.Reply(w, http.StatusOK, `{}`)
	})
	c := newClient(t, s)
	ctx, stale := client.WatchStale(context.Background())
	get := func(ctx context.Context) {
		t.Helper()
		if _, err := c.Cards.Get(ctx, api.CardRef{AgentID: "rev"}); err != nil {
			t.Fatal(err)
		}
	}
	get(ctx)
	if note := stale(); note != "" {
		t.Errorf("after a fresh answer: %q", note)
	}
	get(ctx)
	get(ctx)
	if note := stale(); note != "database unreachable since 10:00:00Z" {
		t.Errorf("after a stale answer and a fresh one: %q", note)
	}
	get(context.Background()) // no watch: nothing to note it in
}
