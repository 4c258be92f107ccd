package web_test

import (
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/agentcards/agentcards/cards/webhooks"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/web/api"
)

// TestConsoleWebhooks: an admin adds a webhook with a filter, sees its deliveries once a change
// went out, sees it failing when the receiver fails, pauses and resumes it, is told why a bad URL
// is refused, and removes it, each change seen through the API; a reader is told who manages them.
func TestConsoleWebhooks(t *testing.T) {
	e := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	alice, rita := consoleTenant(t, e)
	rcv := newReceiver(t)
	apiHooks := func() []webhooks.Webhook {
		t.Helper()
		r := e.do("GET", "/v1/tenants/acme/webhooks", alice, nil)
		expect(t, r, http.StatusOK)
		var l api.WebhookList
		r.json(t, &l)
		return l.Items
	}
	b := newBrowser(t, e)
	b.signIn(alice, "", "#/cards")
	b.do("go to the webhooks", chromedp.Click(chromedp.CSS(`#nav a[data-page="webhooks"]`)))
	b.loaded("#/webhooks")
	b.waitText("#webhooks caption", "0 webhooks")

	// A refused URL says why and adds nothing.
	b.submit("add a bad URL", map[string]string{"#webhook-url": "ftp://hooks.example.com/x"}, "#webhook-save")
	b.waitText("#webhook-status", "Not added: url:")
	if hooks := apiHooks(); len(hooks) != 0 {
		t.Fatalf("after a refused add, the API lists %+v", hooks)
	}

	b.fill("pick removals", "#webhook-agents", "translator-*")
	b.do("check upserts", chromedp.Click(chromedp.ID("webhook-type-upserted")))
	b.submit("add", map[string]string{"#webhook-url": rcv.srv.URL + "/events"}, "#webhook-save")
	b.waitText("#notice", "Added the webhook to "+rcv.srv.URL+"/events")
	b.waitText("#webhooks caption", "1 webhook")
	hooks := apiHooks()
	if len(hooks) != 1 || hooks[0].URL != rcv.srv.URL+"/events" || len(hooks[0].Types) != 1 || hooks[0].Types[0] != webhooks.TypeUpserted ||
		len(hooks[0].AgentIDs) != 1 || hooks[0].AgentIDs[0] != "translator-*" {
		t.Fatalf("after adding, the API lists %+v", hooks)
	}
	id := hooks[0].ID
	row := `#webhooks-table tr[data-id="` + id + `"]`
	b.waitText(row, "upserted of translator-*")
	b.waitText(row, "active")

	// A change goes out; its delivery is listed.
	expect(t, e.do("PATCH", "/v1/tenants/acme/cards/translator-01", alice, map[string]any{"description": "now"}), http.StatusOK)
	e.deliver(t)
	b.do("show the deliveries", chromedp.Click(chromedp.CSS(row+` button[aria-label="Deliveries of `+id+`"]`)))
	b.waitText("#deliveries-table caption", "The last 1 delivery")
	b.waitText("#deliveries-table tbody", "translator-01")
	b.waitText("#deliveries-table tbody", "ok")

	// The receiver fails: the page says the webhook is failing, and why.
	rcv.setStatus(http.StatusBadGateway)
	expect(t, e.do("PATCH", "/v1/tenants/acme/cards/translator-02", alice, map[string]any{"description": "now"}), http.StatusOK)
	e.deliver(t)
	b.open("#/cards") // away and back: the page reads the webhooks again
	b.open("#/webhooks")
	b.waitText(row, "failing 1 in a row")
	b.waitText(row+" .last-error", "answered 502")

	b.do("pause", chromedp.Click(chromedp.CSS(row+` button[aria-label="Pause `+id+`"]`)))
	b.waitText("#notice", "Paused the webhook")
	b.waitText(row, "disabled")
	if hooks := apiHooks(); hooks[0].State != webhooks.StateDisabled {
		t.Errorf("after pausing, the API says %+v", hooks[0])
	}
	rcv.setStatus(0)
	b.do("resume", chromedp.Click(chromedp.CSS(row+` button[aria-label="Resume `+id+`"]`)))
	b.waitText("#notice", "Resumed the webhook")
	b.waitText(row, "active")
	e.deliver(t)
	if got := subjects(rcv.got()); len(got) != 2 || got[1] != "translator-02" {
		t.Errorf("after resuming, the receiver has %q", got)
	}

	b.do("remove", chromedp.Click(chromedp.CSS(row+` button[aria-label="Remove `+id+`"]`)))
	b.confirmDialog(true)
	b.waitText("#notice", "Removed the webhook")
	b.waitText("#webhooks caption", "0 webhooks")
	if hooks := apiHooks(); len(hooks) != 0 {
		t.Errorf("after removing, the API lists %+v", hooks)
	}
	b.checkRequests(e)

	// A reader is told who manages them, and sees no control.
	r := newBrowser(t, e)
	r.signIn(rita, "", "#/cards")
	r.open("#/webhooks")
	r.waitText("#webhooks-refused", "webhooks:manage")
	if n := r.count("#webhook-save, #webhooks-table button"); n != 0 {
		t.Errorf("a reader sees %d controls", n)
	}
}
