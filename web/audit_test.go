package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"testing"

	"github.com/agentcards/agentcards/cards/agenttest"
	"github.com/agentcards/agentcards/tenants/audit"
	"github.com/agentcards/agentcards/web/api"
)

// auditPage reads one page of acme's trail with query q.
func (e *env) auditPage(token, q string) api.AuditPage {
	e.t.Helper()
	r := e.do("GET", "/v1/tenants/acme/audit?"+q, token, nil)
	expect(e.t, r, http.StatusOK)
	var p api.AuditPage
	r.json(e.t, &p)
	return p
}

// lines are the entries as "principal action object before→after outcome[×attempts]", oldest
// first.
func lines(entries []audit.Entry) []string {
	out := make([]string, len(entries))
	for i, en := range entries {
		s := fmt.Sprintf("%s %s %s %d→%d %s", en.Principal, en.Action, en.Object, en.RevisionBefore, en.RevisionAfter, en.Outcome)
		if en.Attempts > 1 {
			s += fmt.Sprintf("×%d", en.Attempts)
		}
		out[len(entries)-1-i] = s
	}
	return out
}

// TestAuditTrail: the writes of every door's requests land in the tenant's trail with who made
// them, the request's name and id, the revisions around them; refused writes are counted; the
// trail reads with filters and pages, only by those allowed.
func TestAuditTrail(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		alice, bob, carol, delegationID := auditWrites(t, e)
		all := e.auditPage(alice, "limit=500")
		if all.NextCursor != "" {
			t.Errorf("one page of 500 has a next cursor")
		}
		checkCardEntries(t, e.auditPage(alice, "object=cards/rev"))
		records := e.auditPage(alice, "object=delegations/"+delegationID)
		if got := lines(records.Items); len(got) != 2 || got[0] != "alice delegations.create delegations/"+delegationID+" 0→0 running" ||
			got[len(got)-1] != "alice delegations.create delegations/"+delegationID+" 0→0 completed" {
			t.Errorf("the delegation's entries: %q", got)
		}
		tenant := e.auditPage(alice, "object=tenant")
		if got := lines(tenant.Items); !slices.Equal(got, []string{"root tenants.create tenant 0→0 ok", "root tenants.update tenant 0→0 ok", "root tenants.update tenant 0→0 ok"}) {
			t.Errorf("the tenant's entries: %q", got)
		} else if tenant.Items[0].Detail != "status active" || tenant.Items[1].Detail != "status suspended" {
			t.Errorf("the status changes' details: %q, %q", tenant.Items[1].Detail, tenant.Items[0].Detail)
		}
		if got := lines(e.auditPage(alice, "principal=bob").Items); !slices.Equal(got, []string{"bob cards.update cards/rev 0→0 denied×2"}) {
			t.Errorf("principal=bob: %q", got)
		}
		if got := lines(e.auditPage(alice, "action=roles.grant").Items); !slices.Equal(got, []string{"alice roles.grant roles/bob 0→1 ok"}) {
			t.Errorf("action=roles.grant: %q", got)
		}
		checkAuditPages(t, e, alice, all)
		checkAuditReaders(t, e, alice, bob, carol)
	})
}

// auditWrites makes tenants acme (admin alice, reader bob) and beta (admin carol), and the
// writes whose entries TestAuditTrail reads: a card registered, patched, refused to bob twice,
// given a secret, delegated to and deleted; acme suspended and made active again. It returns
// the tokens and the delegation's id.
func auditWrites(t *testing.T, e *env) (alice, bob, carol, delegationID string) {
	t.Helper()
	e.mkTenant("acme", "alice")
	e.mkTenant("beta", "carol")
	alice, bob, carol, root := e.token("alice", "acme", false), e.token("bob", "acme", false), e.token("carol", "beta", false), e.admin()
	a := agenttest.New(t, agenttest.Answer(http.StatusOK, `{"result": "looks good"}`))

	expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, sampleCardAt("rev", a.Endpoint()), "X-Request-Id", "reg-1"), http.StatusCreated)
	expect(t, e.do("PATCH", "/v1/tenants/acme/cards/rev", alice, map[string]any{"description": "patched"}, "If-Match", `"1"`), http.StatusOK)
	expect(t, e.do("POST", "/v1/tenants/acme/roles", alice, map[string]string{"subject": "bob", "role": "reader"}), http.StatusCreated)
	// Bob may read, not write: his tries are refused, and counted into one entry.
	for range 2 {
		expect(t, e.do("PATCH", "/v1/tenants/acme/cards/rev", bob, map[string]any{"description": "mine"}), http.StatusForbidden, "forbidden")
	}
	// Refused reads are not in the trail: he may not read it either.
	expect(t, e.do("GET", "/v1/tenants/acme/audit", bob, nil), http.StatusForbidden, "forbidden")
	expect(t, e.do("PUT", "/v1/tenants/acme/cards/rev/secret", alice, map[string]string{"secret": "s3cret"}), http.StatusNoContent)
	r := e.do("POST", "/v1/tenants/acme/delegations", alice, delegate("rev", "sync"))
	expect(t, r, http.StatusOK)
	d := decodeDelegation(t, r)
	expect(t, e.do("PATCH", "/v1/tenants/acme", root, map[string]string{"status": "suspended"}), http.StatusOK)
	expect(t, e.do("PATCH", "/v1/tenants/acme", root, map[string]string{"status": "active"}), http.StatusOK)
	expect(t, e.do("DELETE", "/v1/tenants/acme/cards/rev", alice, nil), http.StatusNoContent)
	return alice, bob, carol, d.ID
}

// checkCardEntries checks the trail of card rev that auditWrites leaves.
func checkCardEntries(t *testing.T, cardsOnly api.AuditPage) {
	t.Helper()
	want := []string{
		"alice cards.register cards/rev 0→1 ok",
		"alice cards.update cards/rev 1→2 ok",
		"bob cards.update cards/rev 0→0 denied×2",
		"alice secrets.set cards/rev/secret 0→0 ok",
		// The card's delete takes its secret with it, in the one entry of the delete.
		"alice cards.remove cards/rev 2→0 ok",
	}
	if got := lines(cardsOnly.Items); !slices.Equal(got, want) {
		t.Errorf("cards/rev:\n got %q\nwant %q", got, want)
	}
	for _, en := range cardsOnly.Items {
		if en.Action == "cards.register" && en.RequestID != "reg-1" {
			t.Errorf("the register entry's request id: %q, want the X-Request-Id sent", en.RequestID)
		}
		if en.RequestID == "" || en.At.IsZero() {
			t.Errorf("an entry without its request id or time: %+v", en)
		}
		if en.Outcome == audit.Denied && en.Detail != "cards:write" {
			t.Errorf("the refusal's detail: %q, want the action refused", en.Detail)
		}
		if en.Action == "cards.remove" && en.Detail != "with its endpoint secret" {
			t.Errorf("the delete's detail: %q, want it to say the secret went with the card", en.Detail)
		}
	}
}

// checkAuditPages checks the trail's time bounds and paging against all of it, newest first.
func checkAuditPages(t *testing.T, e *env, alice string, all api.AuditPage) {
	t.Helper()
	// Time bounds: after the newest entry, nothing; before the first, nothing.
	newest, oldest := all.Items[0], all.Items[len(all.Items)-1]
	if got := e.auditPage(alice, "since="+url.QueryEscape(newest.At.Add(1e3).Format("2006-01-02T15:04:05.999999999Z07:00"))).Items; len(got) != 0 {
		t.Errorf("since after the newest entry: %d entries", len(got))
	}
	if got := e.auditPage(alice, "until="+url.QueryEscape(oldest.At.Format("2006-01-02T15:04:05.999999999Z07:00"))).Items; len(got) != 0 {
		t.Errorf("until the oldest entry: %d entries", len(got))
	}

	// Paging: pages of two, cursor after cursor, make up the whole trail.
	var paged []audit.Entry
	q := "limit=2"
	for {
		p := e.auditPage(alice, q)
		paged = append(paged, p.Items...)
		if p.NextCursor == "" {
			break
		}
		q = "limit=2&cursor=" + url.QueryEscape(p.NextCursor)
	}
	if !slices.Equal(lines(paged), lines(all.Items)) {
		t.Errorf("paged:\n%q\nwhole:\n%q", lines(paged), lines(all.Items))
	}
}

// checkAuditReaders checks the refused reads of the trail (bad queries, another tenant's
// admin, no token) and that audit:read lets bob read it.
func checkAuditReaders(t *testing.T, e *env, alice, bob, carol string) {
	t.Helper()
	for _, q := range []string{"since=yesterday", "until=2026-13-01T00:00:00Z", "limit=0", "limit=501", "cursor=nope", "colour=red",
		"since=2026-12-02T00:00:00Z&until=2026-12-01T00:00:00Z", "principal=a&principal=b",
		"principal=%FF", "object=cards%2F%C3", "principal=alice%20", "action=cards.update%09"} {
		expect(t, e.do("GET", "/v1/tenants/acme/audit?"+q, alice, nil), http.StatusBadRequest, "invalid")
	}
	// Another tenant's admin does not see it; audit:read lets bob read it.
	expect(t, e.do("GET", "/v1/tenants/acme/audit", carol, nil), http.StatusNotFound, "not_found")
	expect(t, e.do("GET", "/v1/tenants/acme/audit", "", nil), http.StatusUnauthorized, "unauthorized")
	expect(t, e.do("POST", "/v1/tenants/acme/policies", alice, map[string]string{"subject": "bob", "object": "audit", "action": "audit:read", "effect": "allow"}), http.StatusCreated)
	if got := e.auditPage(bob, "action=policies.add").Items; len(got) != 1 || got[0].Object != "policies/bob" || got[0].Detail != "allow audit:read on audit" {
		t.Errorf("bob reads the trail with audit:read: %+v", got)
	}
}
