package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/follow"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/web/api"
)

// TestConsoleSources: an admin follows an agentcards tenant with a token, is told with the
// server's message why a bad URL is refused, sees the source listed with its state, gives it a
// new token, and removes it, each change seen through the API; a mirrored card's page says where it comes from and has
// no Edit or Delete; a reader is told who manages sources.
func TestConsoleSources(t *testing.T) {
	e := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	alice, rita := consoleTenant(t, e)
	apiSources := func() []follow.Source {
		t.Helper()
		r := e.do("GET", "/v1/tenants/acme/sources", alice, nil)
		expect(t, r, http.StatusOK)
		var l api.SourceList
		r.json(t, &l)
		return l.Items
	}
	b := newBrowser(t, e)
	b.signIn(alice, "", "#/cards")
	b.do("go to the sources", chromedp.Click(chromedp.CSS(`#nav a[data-page="sources"]`)))
	b.loaded("#/sources")
	b.waitText("#sources caption", "0 sources")

	// A URL that is not a tenant's says why, in the server's words, and adds nothing.
	b.submit("follow a bad URL", map[string]string{"#source-url": "http://127.0.0.1:9/v1/other", "#source-token": "tok"}, "#source-save")
	b.waitText("#source-status", "Not followed: url: an agentcards source is a tenant's URL")
	b.waitText("#source-status", "[400 invalid]")
	if got := apiSources(); len(got) != 0 {
		t.Fatalf("after a refused follow, the API lists %+v", got)
	}

	url := "http://127.0.0.1:9/v1/tenants/upstream"
	b.submit("follow", map[string]string{"#source-url": url, "#source-token": "a-token"}, "#source-save")
	b.waitText("#notice", "Following the source")
	b.waitText("#sources caption", "1 source")
	got := apiSources()
	if len(got) != 1 || got[0].Kind != follow.KindAgentcards || got[0].URL != url || !got[0].Token || got[0].State != follow.StateSyncing {
		t.Fatalf("after following, the API lists %+v", got)
	}
	row := `#sources-table tr[data-id="` + got[0].ID + `"]`
	b.waitText(row, url)
	b.waitText(row+" .state", "syncing")

	// The polled kinds take card URLs and an interval instead of a token.
	b.fill("pick card URLs", "#source-kind", "a2a-urls")
	if n := b.count("#source-token-box:not([hidden]), #source-url-box:not([hidden])"); n != 0 {
		t.Errorf("card URLs show %d fields of the other kinds", n)
	}
	b.submit("follow card URLs", map[string]string{"#source-urls": "http://127.0.0.1:9/a.json\nhttp://127.0.0.1:9/b.json", "#source-interval": "60"}, "#source-save")
	b.waitText("#sources caption", "2 sources")
	for _, s := range apiSources() {
		if s.Kind == follow.KindA2AURLs && (len(s.URLs) != 2 || s.Interval != 60 || s.Token) {
			t.Errorf("the card URLs followed: %+v", s)
		}
	}

	// A new token, from the source's row.
	b.do("new token", chromedp.Click(chromedp.CSS(row+` button[aria-label="New token for `+got[0].ID+`"]`)))
	b.submit("save the token", map[string]string{"#source-new-token": "another-token"}, "#source-token-save")
	b.waitText("#notice", "Saved a new token for "+url)
	if r := e.do("GET", "/v1/tenants/acme/audit?object=sources/"+got[0].ID, alice, nil); !strings.Contains(string(r.body), "token replaced") {
		t.Errorf("no trail of the new token: %s", r.body)
	}

	b.do("remove", chromedp.Click(chromedp.CSS(row+` button[aria-label="Remove `+got[0].ID+`"]`)))
	b.confirmDialog(true)
	b.waitText("#notice", "Removing the source")
	b.waitText(row+" .state", "removing")
	for _, s := range apiSources() {
		if s.ID == got[0].ID && s.State != follow.StateRemoving {
			t.Errorf("after removing, the API has %+v", s)
		}
	}

	// A mirrored card's page says where it is mirrored from, and offers no change.
	c, err := cards.Decode(mustJSON(t, sampleCard("mirrored")))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	c.ID, c.CreatedAt, c.UpdatedAt = "mirrored-1", now, now
	c.Mirror = &cards.Mirror{Source: got[0].ID, Kind: follow.KindAgentcards, URL: url, Revision: 3, SyncedAt: now}
	if _, err := storage.NewCardStore(e.db).Create(context.Background(), "acme", c); err != nil {
		t.Fatal(err)
	}
	e.index.Drop("acme")
	b.open("#/cards/mirrored")
	b.waitText("#mirrored", "Mirrored, read-only, from "+url)
	if n := b.count("#edit-card, #delete-card"); n != 0 {
		t.Errorf("a mirrored card offers %d controls that change it", n)
	}
	b.checkRequests(e)

	// A reader is told who manages sources.
	r := newBrowser(t, e)
	r.signIn(rita, "", "#/cards")
	r.open("#/sources")
	r.waitText("#sources-refused", "sources:manage")
}
