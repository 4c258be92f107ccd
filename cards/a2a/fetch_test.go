package a2a_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards/a2a"
	"github.com/agentcards/agentcards/cards/a2a/a2atest"
	"github.com/agentcards/agentcards/cards/agenttest"
)

// TestA2AImportFetchFailures: a card URL whose connection fails, or whose server fails, is
// fault.FetchFailed (docs/a2a.md errors table: a bad gateway); one that answers, but not with a
// card (a 4xx, HTML, a document over 1 MiB), is fault.Invalid. Nothing is stored. That a URL where
// nothing listens is a 502 fetch_failed over HTTP is web's (TestA2AImportByURL).
func TestA2AImportFetchFailures(t *testing.T) {
	agent := agenttest.New(t, func(w http.ResponseWriter, r *http.Request, got agenttest.Request) {
		switch got.Path {
		case "/close":
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				_ = conn.Close()
			}
		case "/error":
			http.Error(w, "broken", http.StatusInternalServerError)
		case "/html":
			_, _ = w.Write([]byte("<html>card</html>"))
		case "/big":
			_, _ = w.Write([]byte(`{"name": "` + strings.Repeat("x", 1<<20) + `"}`))
		default:
			http.NotFound(w, r)
		}
	})
	f := newFixture(t, "sqlite")
	f.allowLoopback()
	for _, tc := range []struct {
		name, url string
		kind      fault.Kind
		says      string // a part of the message that names the cause, when the kind alone cannot
	}{
		{"connection closed", agent.URL + "/close", fault.FetchFailed, ""},
		// The server there failed: a bad gateway, as when it cannot be reached. A 4xx or a
		// body that is not a card is the URL's fault: invalid.
		{"answers 500", agent.URL + "/error", fault.FetchFailed, ""},
		{"answers 404", agent.URL + "/missing", fault.Invalid, "answered 404"},
		{"answers HTML", agent.URL + "/html", fault.Invalid, ""},
		// A name-only card is refused anyway: the message tells the bound did it.
		{"answers over 1 MiB", agent.URL + "/big", fault.Invalid, "over 1048576 bytes"},
	} {
		_, err := f.importCard(map[string]any{"agentId": "fetch", "url": tc.url})
		wantKind(t, tc.name, err, tc.kind)
		if err != nil && !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v, want a message saying %q", tc.name, err, tc.says)
		}
	}
	f.absent("fetch")
}

// TestA2AImportRedirects: a card URL may redirect within its host (docs/a2a.md: "redirects only
// within the same host"), and the import record names the URL asked for; a redirect to another
// host, even an allowed one, is fault.URLBlocked, unfetched.
func TestA2AImportRedirects(t *testing.T) {
	raw := a2atest.ReadSample(t, "a2a-samples__adk_currency_agent__agent_card.json")
	other := agenttest.New(t, nil)
	other.ServeJSON("/card.json", http.StatusOK, raw)
	agent := agenttest.New(t, nil) // any other path: 404
	agent.ServeJSON("/card.json", http.StatusOK, raw)
	agent.Handle("/moved", http.RedirectHandler("/card.json", http.StatusFound))
	agent.Handle("/moved-twice", http.RedirectHandler("/moved", http.StatusMovedPermanently))
	agent.Handle("/away", http.RedirectHandler(other.URL+"/card.json", http.StatusFound))
	agent.Handle("/elsewhere", http.RedirectHandler("http://localhost:1/.well-known/agent-card.json", http.StatusFound))
	f := newFixture(t, "sqlite")
	f.allowLoopback()
	for _, path := range []string{"/moved", "/moved-twice"} {
		c := f.mustImport(map[string]any{"agentId": "m" + path[1:], "url": agent.URL + path})
		// The record names the URL asked for, not where it led.
		if c.Name != "Currency Conversion Agent" || c.A2A == nil || c.A2A.Import == nil ||
			c.A2A.Import.URL != agent.URL+path || c.A2A.Import.Format != a2a.Version03 {
			t.Errorf("%s: imported %s", path, jsonOf(t, c))
		}
	}
	for _, id := range []string{"away", "elsewhere"} {
		_, err := f.importCard(map[string]any{"agentId": id, "url": agent.URL + "/" + id})
		wantKind(t, id, err, fault.URLBlocked)
		f.absent(id)
	}
	if otherHits := other.Calls(); otherHits != 0 {
		t.Fatalf("the other host was fetched %d times", otherHits)
	}
}
