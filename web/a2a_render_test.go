package web_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/web/webtest"
)

// a2aServer serves e's cards through a second API configured with a2a.cacheMaxAge = maxAge, so
// that a test can tell the configured max-age from the 5-minute default.
func a2aServer(t *testing.T, e *env, maxAge time.Duration) webtest.Client {
	t.Helper()
	return newEnvWith(t, e.db, envOptions{a2aCacheMaxAge: maxAge, keys: e.keys}).client()
}

// TestA2ACacheMaxAgeIsConfigured checks the responses a2a.cacheMaxAge governs: a public card, a
// card read with a token (private) and the public agent list. What each form of a card says is
// cards/a2a's (TestA2ARendersRESTCards).
func TestA2ACacheMaxAgeIsConfigured(t *testing.T) {
	e := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	e.mkTenant("acme", "alice")
	alice := e.token("alice", "acme", false)
	expect(t, e.do("PUT", "/v1/tenants/acme/cards/t", alice, map[string]any{"agentId": "t", "name": "T"}), http.StatusCreated)
	expect(t, e.do("PUT", "/v1/tenants/acme/cards/p", alice, map[string]any{"agentId": "p", "name": "P", "visibility": "public"}), http.StatusCreated)
	api := a2aServer(t, e, 42*time.Second)
	for path, want := range map[string]string{
		"/a2a/acme/p/.well-known/agent-card.json": "public, max-age=42",
		"/a2a/acme/t/.well-known/agent-card.json": "private, max-age=42",
		"/a2a/acme/agents":                        "public, max-age=42",
	} {
		r := api.Do(t, "GET", path, alice, nil)
		webtest.Expect(t, r, http.StatusOK)
		if got := r.Header.Get("Cache-Control"); got != want {
			t.Errorf("%s: Cache-Control %q, want %q", path, got, want)
		}
	}
}
