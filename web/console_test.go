package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/agenttest"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/tenants"
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
		c := consoleCard(fmt.Sprintf("translator-%02d", i), fmt.Sprintf("Translator %d", i), "translate_text")
		c["resources"] = []any{map[string]any{"uri": "https://docs.example.com/*", "access": "read"}}
		batch = append(batch, c)
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
	b.signIn(alice, "", "#/cards")
	b.waitText("#who-tenant", "acme")
	b.waitText("#total", "25 cards match")
	b.waitText("#order", "Sorted by agent id")
	b.waitText(`li[data-agent="summarizer-00"] .badge.live-unknown`, "never heard from")

	// Free text, ten a page: 12 translators, the capability that matched marked.
	b.submit("search", map[string]string{"#f-q": "translate", "#f-limit": "10"}, `form[role=search] button[type=submit]`)
	b.waitText("#total", "12 cards match · page 1")
	b.waitText("#order", "Ranked: best match first")
	if n := b.count("ol.results > li"); n != 10 {
		t.Errorf("page 1 shows %d results, want 10", n)
	}
	b.shot("catalogue")
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
	b.open("#/cards")
	b.submit("resource", map[string]string{"#f-resource": "https://docs.example.com/guide"}, `form[role=search] button[type=submit]`)
	b.waitText("#total", "12 cards match")

	// A card: its fields, liveness, and its A2A card in both versions, signed by the service.
	b.open("#/cards/translator-03")
	b.waitText("#page-title", "Translator 3")
	// An agent never heard from is named alike on the card and in the list.
	b.waitText("#liveness", "never heard from")
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
	b.shot("card")

	// The browser's check is a check: the same card changed by one character does not verify.
	state := b.evalAsync(`(async () => {
		const { verifyCard } = await import('./sig.js');
		const { call } = await import('./api.js');
		const { data } = await call('GET', '/a2a/acme/translator-03/.well-known/agent-card.json');
		const good = (await verifyCard(data)).state;
		data.name += '!';
		return good + ' ' + (await verifyCard(data)).state;
	})()`)
	if state != "verified invalid" {
		t.Errorf("the served card and a changed copy check as %q, want verified and invalid", state)
	}
}

// TestConsoleSignIn: a token the server refuses, or a tenant not the token's, is said so on the
// sign-in page; a keyboard alone signs in and searches; signing out forgets the token.
func TestConsoleSignIn(t *testing.T) {
	e := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	alice, _ := consoleTenant(t, e)
	b := newBrowser(t, e)
	b.open("")
	b.submit("a wrong token", map[string]string{"#f-token": "not.a.token", "#f-tenant": "acme"}, `form.login button[type=submit]`)
	b.waitText("form.login .error", "Not signed in")
	// The status is matched with its bracket: a request id may hold the same digits.
	b.waitText("form.login .error", "[401 ")
	b.submit("another tenant", map[string]string{"#f-token": alice, "#f-tenant": "globex"}, `form.login button[type=submit]`)
	b.waitText("form.login .error", "[404 ")
	if stored := b.evalString(`sessionStorage.getItem('agentcards.token') || ''`); stored != "" {
		t.Errorf("a refused token is kept in sessionStorage")
	}

	// The keyboard alone: Tab from the top reaches the skip link, the token, the tenant and
	// the button; Enter signs in; the focus lands on the page's heading, and the next Tab on
	// the search box.
	b.open("")
	for _, want := range []string{"skip", "f-token", "f-tenant"} {
		b.do("tab", chromedp.KeyEvent(kb.Tab))
		if got := b.focused(); got != want {
			t.Fatalf("Tab reached %q, want %q", got, want)
		}
		if want == "f-token" {
			b.do("type the token", chromedp.KeyEvent(alice))
		}
	}
	b.do("tab to the button and press Enter", chromedp.KeyEvent(kb.Tab), chromedp.KeyEvent(kb.Enter))
	b.loaded("#/cards")
	if got := b.focused(); got != "page-title" {
		t.Errorf("after signing in the focus is on %q, want the page's heading", got)
	}
	b.do("search by keyboard", chromedp.KeyEvent(kb.Tab))
	if got := b.focused(); got != "f-q" {
		t.Fatalf("Tab from the heading reached %q, want the search box", got)
	}
	b.do("type and submit", chromedp.KeyEvent("summar"), chromedp.KeyEvent(kb.Enter))
	b.waitText("#total", "13 cards match")

	b.do("sign out", chromedp.Click(chromedp.ID("sign-out")))
	b.loaded("#/login")
	if stored := b.evalString(`sessionStorage.getItem('agentcards.token') || ''`); stored != "" {
		t.Errorf("signing out left the token in sessionStorage")
	}
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
	for _, tag := range regexp.MustCompile(`<script[^>]*>[^<]*</script>`).FindAllString(html, -1) {
		if !regexp.MustCompile(`^<script[^>]*\ssrc="[a-z]+\.js"[^>]*></script>$`).MatchString(tag) {
			t.Errorf("index.html has an inline script, which the policy refuses: %q", tag)
		}
	}
	if m := regexp.MustCompile(`\son[a-z]+=|\sstyle=|<style`).FindString(html); m != "" {
		t.Errorf("index.html has an inline handler or style, which the policy refuses: %q", m)
	}
	for _, path := range []string{console.Path + "nothing.js", console.Path + "assets/app.js", console.Path + "a/b"} {
		expect(t, e.do("GET", path, "", nil), http.StatusNotFound, "not_found")
	}
	expect(t, e.do("GET", console.Path+"app.js?x=1", "", nil), http.StatusBadRequest, "invalid")
	expect(t, e.do("POST", console.Path+"app.js", "", nil), http.StatusMethodNotAllowed)
}

// TestConsoleEditCard: an admin edits a card in the form. The API's validation message shows at
// the field it names; a card changed by someone else meanwhile is explained (412) and the edits
// are kept, then saved over the new revision; a delete asks first.
func TestConsoleEditCard(t *testing.T) {
	e := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	alice, _ := consoleTenant(t, e)
	b := newBrowser(t, e)
	b.signIn(alice, "acme", "#/cards")

	b.open("#/cards/translator-05")
	b.do("edit", chromedp.Click(chromedp.ID("edit-card")))
	b.waitText("#base-revision", "Editing revision 1")

	// An invalid name and protocol: the server's messages, at their fields.
	b.submit("save an invalid card", map[string]string{"#f-name": "  ", "#f-protocols": "a2a, Not A Protocol"}, "#save")
	b.waitText("#f-name-error", "name: is required")
	b.waitText("#f-protocols-error", "protocols[1]")
	b.waitText("#form-errors", "2 problems")
	if b.count(`#f-name[aria-invalid="true"]`) != 1 || b.count(`#f-protocols[aria-invalid="true"]`) != 1 || b.count(`#f-version[aria-invalid]`) != 0 {
		t.Errorf("the fields marked invalid are not the name and the protocols")
	}
	if c := e.card(t, alice, "translator-05"); c.Revision != 1 || c.Name != "Translator 5" {
		t.Fatalf("an invalid save changed the card: %+v", c)
	}

	// Someone else changes the card while the form is open: the save is refused with 412, the
	// form keeps the user's edits, takes the other's change of a field the user left alone, and
	// shows the other's value of a field both changed.
	b.fill("edit", "#f-protocols", "a2a, http")
	b.fill("edit", "#f-name", "Translator Prime")
	b.fill("edit", "#f-version", "2.0.0")
	expect(t, e.do("PATCH", "/v1/tenants/acme/cards/translator-05", alice,
		map[string]any{"description": "Changed by someone else.", "version": "1.5.0"}), http.StatusOK)
	b.do("save over a stale revision", chromedp.Click(chromedp.ID("save")))
	b.waitText("#stale", "You started from revision 1; someone saved revision 2 since")
	b.waitText("#stale", "fields you had not touched are now in the form: description")
	b.waitText("#stale", "You both changed version")
	if strings.Contains(b.textNow("#stale"), "null") {
		t.Errorf("the explanation shows a null: %q", b.textNow("#stale"))
	}
	b.waitText(`[data-field="version"] .now-stored`, "1.5.0")
	for sel, want := range map[string]string{"#f-name": "Translator Prime", "#f-version": "2.0.0", "#f-description": "Changed by someone else."} {
		if got := b.value(sel); got != want {
			t.Errorf("after the 412 %s holds %q, want %q", sel, got, want)
		}
	}
	if c := e.card(t, alice, "translator-05"); c.Revision != 2 || c.Name != "Translator 5" {
		t.Fatalf("a stale save changed the card: %+v", c)
	}
	b.do("save again", chromedp.Click(chromedp.ID("save")))
	b.waitText("#notice", "Saved translator-05: revision 3")
	b.waitText("#page-title", "Translator Prime")
	// The saves sent only what the user changed: never the description they left alone.
	patches := b.sent("PATCH", "/cards/translator-05")
	if len(patches) != 3 {
		t.Fatalf("the console sent %d PATCHes, want 3 (invalid, stale, saved)", len(patches))
	}
	var last map[string]any
	if err := json.Unmarshal([]byte(patches[2].body), &last); err != nil {
		t.Fatalf("the last PATCH's body %q: %v", patches[2].body, err)
	}
	if want := map[string]any{"name": "Translator Prime", "version": "2.0.0"}; !reflect.DeepEqual(last, want) {
		t.Errorf("the last PATCH sent %v, want only the fields the user changed, %v", last, want)
	}
	c := e.card(t, alice, "translator-05")
	if c.Revision != 3 || c.Name != "Translator Prime" || c.Version != "2.0.0" || c.Description != "Changed by someone else." {
		t.Errorf("after the second save: revision %d, name %q, version %q, description %q; want 3, the user's name and version, the other's description",
			c.Revision, c.Name, c.Version, c.Description)
	}

	// Delete: cancelled, then confirmed.
	b.open("#/cards/summarizer-01")
	b.waitText("#page-title", "Summarizer 1")
	b.do("delete", chromedp.Click(chromedp.ID("delete-card")))
	b.confirmDialog(false)
	if d := b.sent("DELETE", "/cards/summarizer-01"); len(d) != 0 {
		t.Errorf("a cancelled delete sent %d DELETEs", len(d))
	}
	expect(t, e.do("GET", "/v1/tenants/acme/cards/summarizer-01", alice, nil), http.StatusOK)
	b.do("delete", chromedp.Click(chromedp.ID("delete-card")))
	b.confirmDialog(true)
	b.waitText("#notice", "Deleted summarizer-01")
	b.waitText("#total", "24 cards match")
	expect(t, e.do("GET", "/v1/tenants/acme/cards/summarizer-01", alice, nil), http.StatusNotFound, "not_found")
}

// TestConsoleConfirmAnswersEachQuestion: the dialog's answer goes to the question it answers.
// The dialog's close event is dispatched as a task of its own, after a click that may already
// have asked the next question (the browser may run input first): here the first question is
// cancelled and the second asked and confirmed before that event runs, so each must get its own
// button's answer, not the event's.
func TestConsoleConfirmAnswersEachQuestion(t *testing.T) {
	e := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	alice, _ := consoleTenant(t, e)
	b := newBrowser(t, e)
	b.signIn(alice, "", "#/cards")
	got := b.evalAsync(`(async () => {
		const ui = await import('./ui.js');
		const first = ui.confirm('First?');
		document.getElementById('confirm-cancel').click();
		const second = ui.confirm('Second?');
		document.getElementById('confirm-ok').click();
		const escaped = ui.confirm('Third?');
		document.getElementById('confirm').close();
		return JSON.stringify([await first, await second, await escaped]);
	})()`)
	if got != "[false,true,false]" {
		t.Fatalf("cancel, confirm, close answered %s; want [false,true,false]", got)
	}
}

// TestConsoleReader: a reader sees cards but no edit or delete controls, and a save they try
// anyway (the edit page by its address) is refused by the server and changes nothing.
func TestConsoleReader(t *testing.T) {
	e := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	alice, rita := consoleTenant(t, e)
	b := newBrowser(t, e)
	b.signIn(rita, "", "#/cards")
	b.waitText("#total", "25 cards match")
	b.open("#/cards/translator-01")
	b.waitText("#page-title", "Translator 1")
	b.waitText("#history", "needs policies:manage or audit:read")
	if n := b.count("#edit-card, #delete-card"); n != 0 {
		t.Errorf("a reader sees %d edit or delete controls", n)
	}
	b.open("#/cards/translator-01/edit")
	b.waitText("#not-allowed", "does not allow changing this card")
	b.submit("save as a reader", map[string]string{"#f-name": "Renamed by a reader"}, "#save")
	b.waitText("#form-errors", "Refused: your token may not change this card")
	if c := e.card(t, alice, "translator-01"); c.Name != "Translator 1" || c.Revision != 1 {
		t.Errorf("a reader's save changed the card: %+v", c)
	}
	b.open("#/access")
	b.waitText("#roles-refused", "policies:manage")
	if n := b.count("#policies"); n != 0 {
		t.Errorf("a reader sees the policies section")
	}
	b.fill("ask", "#check-action", "cards:write")
	b.fill("ask", "#check-object", "cards/translator-01")
	b.do("ask", chromedp.Click(chromedp.CSS("#check button[type=submit]")))
	b.waitText("#check-answer", "Refused")
}

// TestConsoleAccess: an admin grants a role, asks whether its holder may do something, adds a
// policy and revokes the role, each change seen through the API.
func TestConsoleAccess(t *testing.T) {
	e := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	alice, _ := consoleTenant(t, e)
	b := newBrowser(t, e)
	b.signIn(alice, "", "#/cards")
	b.open("#/access")
	b.waitText("#roles", "rita")

	b.submit("grant", map[string]string{"#grant-subject": "carol", "#grant-role": "editor"}, `#roles form button[type=submit]`)
	b.waitText("#notice", "Granted editor to carol")
	b.waitText("#roles", "carol")
	roles := e.do("GET", "/v1/tenants/acme/roles", alice, nil)
	expect(t, roles, http.StatusOK)
	if !strings.Contains(string(roles.body), `{"subject":"carol","role":"editor"}`) {
		t.Errorf("the API does not list the role granted: %s", roles.body)
	}

	b.submit("ask for carol", map[string]string{"#check-subject": "carol", "#check-action": "cards:write", "#check-object": "cards/translator-01"},
		"#check button[type=submit]")
	b.waitText("#check-answer", "Allowed")
	b.submit("ask for dave", map[string]string{"#check-subject": "dave"}, "#check button[type=submit]")
	b.waitText("#check-answer", "Refused")

	// A deny policy wins over carol's role.
	b.submit("add a policy", map[string]string{"#policy-subject": "carol", "#policy-object": "cards/translator-01",
		"#policy-action": "cards:write", "#policy-effect": "deny"}, `#policies form button[type=submit]`)
	b.waitText("#notice", "Policy added")
	b.submit("ask for carol again", map[string]string{"#check-subject": "carol", "#check-action": "cards:write", "#check-object": "cards/translator-01"},
		"#check button[type=submit]")
	b.waitText("#check-answer", "Refused")

	b.do("revoke", chromedp.Click(chromedp.CSS(`tr[data-subject="carol"][data-role="editor"] button`)))
	b.confirmDialog(true)
	b.waitText("#notice", "Revoked editor from carol")
	b.waitText("#roles caption", "2 role assignments")
	if n := b.count(`tr[data-subject="carol"]`); n != 0 {
		t.Errorf("carol is still listed after the revoke")
	}
	roles = e.do("GET", "/v1/tenants/acme/roles", alice, nil)
	if strings.Contains(string(roles.body), `"carol"`) {
		t.Errorf("the API still lists carol: %s", roles.body)
	}
}

// TestConsoleAccessChoices: the role, action, subject and object fields offer what the tenant's
// rules name besides the built-in ones, and take free text too.
func TestConsoleAccessChoices(t *testing.T) {
	e := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	alice, _ := consoleTenant(t, e)
	expect(t, e.do("POST", "/v1/tenants/acme/policies", alice, policyRule("auditor", "audit", "audit:read", "allow")), http.StatusCreated)
	b := newBrowser(t, e)
	b.signIn(alice, "", "#/cards")
	b.open("#/access")
	b.waitText("#roles", "rita")
	options := func(list string) string {
		return b.evalString(`[...document.getElementById(` + strconv.Quote(list) + `).options].map((o) => o.value).join(' ')`)
	}
	for list, want := range map[string][]string{
		"roles-list":    {"reader", "editor", "orchestrator", "admin"},
		"actions":       {"cards:read", "policies:manage", "audit:read", "search:manage"},
		"subjects-list": {"alice", "rita", "auditor", "admin"},
		"objects-list":  {"policies", "audit", "cards/*", "cards/*/capabilities/*"},
	} {
		got := strings.Fields(options(list))
		for _, w := range want {
			if !slices.Contains(got, w) {
				t.Errorf("#%s offers %v, without %s", list, got, w)
			}
		}
	}
	for _, sel := range []string{"#grant-role", "#grant-subject", "#policy-action", "#policy-object", "#policy-subject", "#check-action", "#check-object"} {
		if tag := b.evalString(`document.querySelector(` + strconv.Quote(sel) + `).tagName + ' ' + (document.querySelector(` + strconv.Quote(sel) + `).getAttribute('list') || '')`); !strings.HasPrefix(tag, "INPUT ") || strings.HasSuffix(tag, " ") {
			t.Errorf("%s is %q, want a text input with a list", sel, tag)
		}
	}
	// A role outside the list is sent as typed, and the server says why it refuses it.
	b.submit("grant a custom role", map[string]string{"#grant-subject": "carol", "#grant-role": "owner"}, `#roles form button[type=submit]`)
	b.waitText("#grant-status", `role "owner" must be one of`)
}

// TestConsoleAccessLockout: the confirmation of a change that would leave no one to manage the
// tenant's roles and policies says so before anything is sent, as the server words it; sent
// anyway, it is refused with the server's message, and nothing changes. With a second admin the
// same revoke is confirmed without the warning.
func TestConsoleAccessLockout(t *testing.T) {
	e := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	alice, _ := consoleTenant(t, e)
	b := newBrowser(t, e)
	b.signIn(alice, "", "#/cards")
	b.open("#/access")
	b.waitText("#roles", "rita")
	const why = "would leave no one who may manage the tenant's roles and policies"

	b.do("revoke alice's admin", chromedp.Click(chromedp.CSS(`tr[data-subject="alice"][data-role="admin"] button`)))
	b.waitText("#confirm-text", why)
	b.waitText("#confirm-text", "give another subject the admin role first")
	b.waitText("#confirm-text", "409 lockout")
	b.confirmDialog(false)
	if n := len(b.sent("DELETE", "/roles")); n != 0 {
		t.Fatalf("%d revokes sent after the dialog was cancelled", n)
	}
	b.do("revoke alice's admin again", chromedp.Click(chromedp.CSS(`tr[data-subject="alice"][data-role="admin"] button`)))
	b.confirmDialog(true)
	b.waitText("#notice", "Not revoked")
	b.waitText("#notice", "[409 lockout]")

	b.do("remove the admin role's policies:manage", chromedp.Click(chromedp.CSS(`button[aria-label="Remove allow policies:manage on policies for admin"]`)))
	b.waitText("#confirm-text", why)
	b.waitText("#confirm-text", "first allow policies:manage on policies")
	b.confirmDialog(false)

	b.submit("deny alice", map[string]string{"#policy-subject": "alice", "#policy-object": "policies",
		"#policy-action": "policies:manage", "#policy-effect": "deny"}, `#policies form button[type=submit]`)
	b.waitText("#confirm-text", why)
	b.waitText("#confirm-text", "deny a narrower subject")
	b.confirmDialog(false)
	if n := len(b.sent("POST", "/policies")); n != 0 {
		t.Fatalf("%d policies sent after the dialog was cancelled", n)
	}

	r := e.do("GET", "/v1/tenants/acme/roles", alice, nil)
	var roles roleList
	r.json(t, &roles)
	if !roles.has("alice", "admin") {
		t.Fatalf("alice lost her admin role: %+v", roles)
	}

	// With bob an admin too, alice's revoke is asked without the warning, and passes.
	b.submit("grant bob admin", map[string]string{"#grant-subject": "bob", "#grant-role": "admin"}, `#roles form button[type=submit]`)
	b.waitText("#notice", "Granted admin to bob")
	b.do("revoke alice's admin with bob", chromedp.Click(chromedp.CSS(`tr[data-subject="alice"][data-role="admin"] button`)))
	b.waitText("#confirm-text", "Take the role admin from alice?")
	if text := b.textNow("#confirm-text"); strings.Contains(text, why) {
		t.Errorf("the confirmation warns although bob keeps the right: %q", text)
	}
	b.confirmDialog(true)
	b.waitText("#notice", "Revoked admin from alice")
}

// TestConsoleSynonyms: an admin adds a synonym set, edits its words, is told why a bad edit is
// refused, and removes it, each change seen through the API; a reader sees the sets but no
// control that changes them.
func TestConsoleSynonyms(t *testing.T) {
	e := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	alice, rita := consoleTenant(t, e)
	apiSets := func() string {
		t.Helper()
		r := e.do("GET", "/v1/tenants/acme/synonyms", alice, nil)
		expect(t, r, http.StatusOK)
		var l struct{ Items []tenants.SynonymSet }
		r.json(t, &l)
		var out []string
		for _, s := range l.Items {
			out = append(out, s.ID+"="+strings.Join(s.Words, ","))
		}
		return strings.Join(out, " ")
	}
	b := newBrowser(t, e)
	b.signIn(alice, "", "#/cards")
	b.do("go to the synonyms", chromedp.Click(chromedp.CSS(`#nav a[data-page="synonyms"]`)))
	b.loaded("#/synonyms")
	b.waitText("#synonyms caption", "0 synonym sets")

	b.submit("add a set", map[string]string{"#synonym-id": "l10n", "#synonym-words": "translation\n localization \n\n"}, "#synonym-save")
	b.waitText("#notice", "Saved the synonym set l10n")
	b.waitText(`#synonyms-table tr[data-id="l10n"]`, "translation, localization")
	if got := apiSets(); got != "l10n=translation,localization" {
		t.Errorf("after adding, the API lists %q", got)
	}

	// Edit: the form takes the set's words, one a line, and saves them over it.
	b.do("edit", chromedp.Click(chromedp.CSS(`tr[data-id="l10n"] button[aria-label="Edit l10n"]`)))
	if v := b.value("#synonym-words"); v != "translation\nlocalization" {
		t.Errorf("the form holds %q to edit", v)
	}
	if f := b.focused(); f != "synonym-words" {
		t.Errorf("the focus is on %q, not the words", f)
	}
	b.submit("edit the words", map[string]string{"#synonym-words": "translation\nlocalisation\ni18n"}, "#synonym-save")
	b.waitText("#notice", "Saved the synonym set l10n")
	b.waitText(`#synonyms-table tr[data-id="l10n"]`, "translation, localisation, i18n")
	if got := apiSets(); got != "l10n=translation,localisation,i18n" {
		t.Errorf("after editing, the API lists %q", got)
	}

	// A refused edit says why and changes nothing.
	b.submit("save one word", map[string]string{"#synonym-id": "l10n", "#synonym-words": "translation"}, "#synonym-save")
	b.waitText("#synonym-status", "Not saved: words: a set has 2 to 32 words")
	if got := apiSets(); got != "l10n=translation,localisation,i18n" {
		t.Errorf("after a refused edit, the API lists %q", got)
	}

	b.do("remove", chromedp.Click(chromedp.CSS(`tr[data-id="l10n"] button[aria-label="Remove l10n"]`)))
	b.confirmDialog(true)
	b.waitText("#notice", "Removed the synonym set l10n")
	b.waitText("#synonyms caption", "0 synonym sets")
	if got := apiSets(); got != "" {
		t.Errorf("after removing, the API lists %q", got)
	}

	// A reader sees the sets and no control.
	expect(t, e.do("PUT", "/v1/tenants/acme/synonyms/cr", alice, map[string]any{"words": []string{"code review", "pull request review"}}), http.StatusOK)
	r := newBrowser(t, e)
	r.signIn(rita, "", "#/cards")
	r.open("#/synonyms")
	r.waitText(`#synonyms-table tr[data-id="cr"]`, "code review, pull request review")
	r.waitText("#synonyms-readonly", "search:manage")
	if n := r.count("#synonym-save, #synonyms-table button"); n != 0 {
		t.Errorf("a reader sees %d controls that change the sets", n)
	}
}

// TestConsoleDelegations: the delegation page charts the records' outcomes and latency, with
// the numbers in a table, and filters the records.
func TestConsoleDelegations(t *testing.T) {
	e := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	ok := agenttest.New(t, agenttest.Answer(http.StatusOK, `{"status": "completed", "result": {"ok": true}}`))
	failing := agenttest.New(t, agenttest.Answer(http.StatusUnprocessableEntity, `the repository is archived`))
	alice, olga := e.delegationSetup("acme", "reviewer", ok.Endpoint())
	card := sampleCard("broken")
	card["endpoint"] = failing.Endpoint()
	expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, card), http.StatusCreated)
	for range 5 {
		expect(t, e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("reviewer", "sync")), http.StatusOK)
	}
	for range 2 {
		e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("broken", "sync"))
	}

	b := newBrowser(t, e)
	b.signIn(alice, "", "#/cards")
	b.open("#/delegations")
	b.waitText("#charted", "7 delegations")
	if n := b.count(`#outcomes-chart rect[data-status="completed"]`); n == 0 {
		t.Error("the outcome chart has no bar of completed delegations")
	}
	if n := b.count(`#outcomes-chart rect[data-status="failed"]`); n == 0 {
		t.Error("the outcome chart has no bar of failed delegations")
	}
	if n := b.count(`#latency-chart circle.p50`) + b.count(`#latency-chart circle.p95`); n < 2 {
		t.Errorf("the latency chart has %d points, want p50 and p95", n)
	}
	b.waitText(`#chart-numbers td[data-total="completed"]`, "5")
	b.waitText(`#chart-numbers td[data-total="failed"]`, "2")
	if n := b.count("#records-table tbody tr"); n != 7 {
		t.Errorf("the records table has %d rows, want 7", n)
	}

	b.submit("filter", map[string]string{"#filter-status": "failed"}, `form[aria-label="Filter delegations"] button[type=submit]`)
	b.loaded("#/delegations?status=failed")
	b.waitText("#charted", "2 delegations")
	if n := b.count("#records-table tbody tr"); n != 2 {
		t.Errorf("filtered by failed, the records table has %d rows, want 2", n)
	}
	b.waitText("#records-table", "the repository is archived")

	// A delegation that took no measurable time shows 0 ms, not nothing.
	const instant = "0b7e4f4c-7d0e-4c53-9a39-2b0d3f1f6a01"
	expect(t, e.do("POST", "/v1/tenants/acme/delegations:import", alice, map[string]any{"source": "agentkit-mesh", "records": []any{
		map[string]any{"id": instant, "agentId": "reviewer", "status": "completed", "latencyMs": 0, "createdAt": "2026-01-02T03:04:05Z"},
	}}), http.StatusOK)
	b.open("#/delegations?status=completed")
	b.waitText(`#records-table tr[data-id="`+instant+`"] td[data-latency]`, "0 ms")
}

// TestConsoleTenants: a platform admin, whose token names no tenant, lists, creates, suspends
// and reactivates tenants, and acts in one.
func TestConsoleTenants(t *testing.T) {
	e := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	consoleTenant(t, e)
	root := e.admin()
	b := newBrowser(t, e)
	b.signIn(root, "", "#/tenants")
	b.waitText("#tenants-table", "acme")

	b.submit("create", map[string]string{"#tenant-id": "beta", "#tenant-name": "Beta Inc", "#tenant-admins": "zed, yan"}, `form button[type=submit]`)
	b.waitText("#notice", "Created beta")
	b.waitText("#tenants-table", "Beta Inc")
	roles := e.do("GET", "/v1/tenants/beta/roles", root, nil)
	expect(t, roles, http.StatusOK)
	if !strings.Contains(string(roles.body), `"zed"`) || !strings.Contains(string(roles.body), `"yan"`) {
		t.Errorf("beta's admins are not zed and yan: %s", roles.body)
	}

	b.do("suspend", chromedp.Click(chromedp.CSS(`tr[data-tenant="beta"] button.danger`)))
	b.confirmDialog(true)
	b.waitText("#notice", "beta is suspended now")
	b.waitText(`tr[data-tenant="beta"]`, "suspended")
	expect(t, e.do("GET", "/v1/tenants/beta/cards", e.token("zed", "beta", false), nil), http.StatusForbidden, "tenant_suspended")
	b.do("reactivate", chromedp.Click(chromedp.CSS(`tr[data-tenant="beta"] button[aria-label="Reactivate beta"]`)))
	b.waitText("#notice", "beta is active now")
	expect(t, e.do("GET", "/v1/tenants/beta/cards", e.token("zed", "beta", false), nil), http.StatusOK)

	b.do("act in acme", chromedp.Click(chromedp.CSS(`tr[data-tenant="acme"] button[aria-label="Act in acme"]`)))
	b.waitText("#who-tenant", "acme")
	b.waitText("#total", "25 cards match")
	b.waitText("#order", "Sorted by agent id")
	b.waitText(`li[data-agent="summarizer-00"] .badge.live-unknown`, "never heard from")
}
