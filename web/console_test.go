package web_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/web/console"
)

// consoleCard is a card of the console tests: an agent with one capability.
func consoleCard(agentID, name, capability string) map[string]any {
	return map[string]any{
		"agentId": agentID, "name": name, "description": "An agent that does " + capability + " for the console tests.",
		"protocols": []string{"a2a", "http"}, "endpoint": "https://agents.example.com/" + agentID,
		"capabilities": []any{map[string]any{"name": capability, "title": strings.ToUpper(capability[:1]) + capability[1:]},
			map[string]any{"name": "report_status"}},
		"tags": []string{"console"},
		"a2a": map[string]any{"interfaces": []any{
			map[string]any{"url": "https://agents.example.com/" + agentID + "/v1", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
			map[string]any{"url": "https://agents.example.com/" + agentID + "/v03", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
		}},
	}
}

// consoleTenant makes tenant acme with admin alice and reader rita, and 12 translators and 13
// summarizers in it.
func consoleTenant(t *testing.T, e *env) (alice, rita string) {
	t.Helper()
	e.mkTenant("acme", "alice")
	alice, rita = e.token("alice", "acme", false), e.token("rita", "acme", false)
	expect(t, e.do("POST", "/v1/tenants/acme/roles", alice, map[string]string{"subject": "rita", "role": "reader"}), http.StatusCreated)
	var batch []any
	for i := range 12 {
		batch = append(batch, consoleCard(fmt.Sprintf("translator-%02d", i), fmt.Sprintf("Translator %d", i), "translate_text"))
	}
	for i := range 13 {
		batch = append(batch, consoleCard(fmt.Sprintf("summarizer-%02d", i), fmt.Sprintf("Summarizer %d", i), "summarize"))
	}
	expect(t, e.do("POST", "/v1/tenants/acme/cards:batch", alice, batch), http.StatusCreated)
	return alice, rita
}

func (e *env) card(t *testing.T, token, agentID string) cards.Card {
	t.Helper()
	r := e.do("GET", "/v1/tenants/acme/cards/"+agentID, token, nil)
	expect(t, r, http.StatusOK)
	var c cards.Card
	r.json(t, &c)
	return c
}

// TestConsoleCatalogue: an admin signs in with a token, searches with filters, pages through
// the results, opens a card and reads its A2A renderings with their signatures checked.
func TestConsoleCatalogue(t *testing.T) {
	e := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	alice, _ := consoleTenant(t, e)
	b := newBrowser(t, e)
	b.signIn(alice, "")
	b.waitText("#who-tenant", "acme")
	b.waitText("#total", "25 cards match")

	// Free text, ten a page: 12 translators, the capability that matched marked.
	b.submit("search", map[string]string{"#f-q": "translate", "#f-limit": "10"}, `form[role=search] button[type=submit]`)
	b.waitText("#total", "12 cards match · page 1")
	if n := b.count("ol.results > li"); n != 10 {
		t.Errorf("page 1 shows %d results, want 10", n)
	}
	if n := b.count("ol.results > li mark"); n != 10 {
		t.Errorf("%d results mark a matched capability, want 10", n)
	}
	b.waitText("ol.results > li mark", "translate_text")
	b.do("next page", chromedp.Click(chromedp.ID("next-page")))
	b.waitText("#total", "page 2")
	if n := b.count("ol.results > li"); n != 2 {
		t.Errorf("page 2 shows %d results, want 2", n)
	}
	b.do("previous page", chromedp.Click(chromedp.ID("prev-page")))
	b.waitText("#total", "page 1")

	// Filters: a capability and a status nobody has.
	b.open("#/cards")
	b.submit("filter", map[string]string{"#f-capability": "summarize", "#f-q": ""}, `form[role=search] button[type=submit]`)
	b.waitText("#total", "13 cards match")
	b.open("#/cards?capability=summarize&status=deprecated")
	b.waitText("#total", "0 cards match")

	// A card: its fields, liveness, and its A2A card in both versions, signed by the service.
	b.open("#/cards/translator-03")
	b.waitText("#page-title", "Translator 3")
	b.waitText("#liveness", "unknown")
	for _, v := range []string{"default", "1.0", "0.3"} {
		b.do("A2A "+v, chromedp.Click(chromedp.CSS(`[id="a2a-`+v+`"]`)))
		shown := `#a2a-json[aria-label="A2A ` + v + ` card"]`
		b.waitText(shown, `"name": "Translator 3"`)
		if v == "0.3" {
			b.waitText(shown, `"protocolVersion": "0.3.0"`)
		}
		b.waitText("#a2a-signature", "Signature verified in this browser")
	}
	b.waitText("#history-table", "cards.register_batch")
}

// TestConsoleFiles: the console is served from the binary with its security headers, and
// nothing but its own files.
func TestConsoleFiles(t *testing.T) {
	e := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	r := e.do("GET", "/console", "", nil)
	// The test client follows the redirect to /console/.
	expect(t, r, http.StatusOK)
	for _, name := range append(console.Names(), "") {
		r := e.do("GET", console.Path+name, "", nil)
		expect(t, r, http.StatusOK)
		if got := r.header.Get("Content-Security-Policy"); got != console.Policy {
			t.Errorf("%s: Content-Security-Policy %q", name, got)
		}
		if strings.Contains(console.Policy, "unsafe") {
			t.Errorf("the policy allows unsafe sources: %s", console.Policy)
		}
		if r.header.Get("X-Content-Type-Options") != "nosniff" || r.header.Get("Content-Type") == "" {
			t.Errorf("%s: headers %v", name, r.header)
		}
		again := e.do("GET", console.Path+name, "", nil, "If-None-Match", r.header.Get("ETag"))
		expect(t, again, http.StatusNotModified)
		head := e.do("HEAD", console.Path+name, "", nil)
		expect(t, head, http.StatusOK)
		if head.header.Get("Content-Length") != fmt.Sprint(len(r.body)) {
			t.Errorf("HEAD %s: Content-Length %q, the body has %d bytes", name, head.header.Get("Content-Length"), len(r.body))
		}
	}
	html := string(e.do("GET", console.Path, "", nil).body)
	if strings.Contains(html, "<script>") || strings.Contains(html, "style=") || strings.Contains(html, " on") && strings.Contains(html, "onclick") {
		t.Errorf("index.html has inline script or style, which the policy refuses")
	}
	for _, path := range []string{console.Path + "nothing.js", console.Path + "assets/app.js", console.Path + "a/b"} {
		expect(t, e.do("GET", path, "", nil), http.StatusNotFound, "not_found")
	}
	expect(t, e.do("GET", console.Path+"app.js?x=1", "", nil), http.StatusBadRequest, "invalid")
	expect(t, e.do("POST", console.Path+"app.js", "", nil), http.StatusMethodNotAllowed)
}
