package web_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/agentcards/agentcards/authz/token"
	"github.com/agentcards/agentcards/cards/agenttest"
	"github.com/agentcards/agentcards/cards/delegation"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/web/webtest"
)

// delegationSetup makes tenant acme with admin alice and orchestrator olga, and card agt1 that
// points at the agent.
func (e *env) delegationSetup(tenant, agentID, endpoint string) (alice, olga string) {
	e.t.Helper()
	e.mkTenant(tenant, "alice")
	alice, olga = e.token("alice", tenant, false), e.token("olga", tenant, false)
	expect(e.t, e.do("POST", "/v1/tenants/"+tenant+"/roles", alice, map[string]string{"subject": "olga", "role": "orchestrator"}), http.StatusCreated)
	card := sampleCard(agentID)
	card["endpoint"] = endpoint
	expect(e.t, e.do("POST", "/v1/tenants/"+tenant+"/cards", alice, card), http.StatusCreated)
	return alice, olga
}

// patchTenant sets one of the tenant's settings as a platform admin, and returns the tenant
// the PATCH answered with.
func (e *env) patchTenant(tenant, setting string, on bool) tenants.Tenant {
	e.t.Helper()
	r := e.do("PATCH", "/v1/tenants/"+tenant, e.admin(), map[string]any{setting: on})
	expect(e.t, r, http.StatusOK)
	var ten tenants.Tenant
	r.json(e.t, &ten)
	return ten
}

func delegate(agentID string, mode string) map[string]any {
	return map[string]any{"agentId": agentID, "capability": "review_pr", "task": "Review PR 12 of acme/web",
		"context": map[string]any{"repo": "acme/web"}, "mode": mode}
}

func decodeDelegation(t testing.TB, r response) delegation.Delegation {
	t.Helper()
	var d delegation.Delegation
	r.json(t, &d)
	return d
}

// waitStatus polls a delegation record through the API until it has status want, and fails
// the test at once if the record ends in another status, since an outcome never changes.
func (e *env) waitStatus(tenant, id, token string, want delegation.Status) delegation.Delegation {
	e.t.Helper()
	var d delegation.Delegation
	webtest.Eventually(e.t, patience, "delegation "+id+" reaches "+string(want), func() bool {
		r := e.do("GET", "/v1/tenants/"+tenant+"/delegations/"+id, token, nil)
		expect(e.t, r, http.StatusOK)
		d = decodeDelegation(e.t, r)
		if d.Status != want && d.Status.Terminal() {
			e.t.Fatalf("delegation %s ended %s, want %s: %+v", id, d.Status, want, d)
		}
		return d.Status == want
	})
	return d
}

// verifyWithJWKS checks a delegation token as an agent would: with the keys the server publishes.
func (e *env) verifyWithJWKS(raw string) token.DelegationClaims {
	e.t.Helper()
	c, err := webtest.VerifyJWT[token.DelegationClaims](e.jwks(), raw, jwt.WithIssuer("agentcards"))
	if err != nil {
		e.t.Fatalf("the agent cannot verify the delegation token: %v", err)
	}
	return c
}

// TestDelegationSync: a sync delegation reaches the agent with the POST /task body and a token
// the agent verifies with the published keys, and answers with the outcome; the record is read
// by its caller and admins only; no policy means 403 and nothing sent.
func TestDelegationSync(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		a := agenttest.New(t, agenttest.Answer(http.StatusOK, `{"result": {"approved": true}}`))
		alice, olga := e.delegationSetup("acme", "agt1", a.Endpoint())
		r := e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "sync"))
		expect(t, r, http.StatusOK)
		d := decodeDelegation(t, r)
		if d.Status != delegation.StatusCompleted || string(d.Result) != `{"approved":true}` && string(d.Result) != `{"approved": true}` ||
			d.Caller != "olga" || d.Depth != 1 || d.Mode != delegation.ModeSync {
			t.Fatalf("outcome %+v (%s)", d, d.Result)
		}
		call := a.Last()
		got, auth := call.Task, call.Header.Get("Authorization")
		if got.DelegationID != d.ID || got.Task != "Review PR 12 of acme/web" || got.CallbackURL != "" || !strings.Contains(string(got.Context), "acme/web") {
			t.Fatalf("agent received %+v", got)
		}
		c := e.verifyWithJWKS(strings.TrimPrefix(auth, "Bearer "))
		if c.Tenant != "acme" || c.Caller != "olga" || c.Capability != "review_pr" || c.DelegationID != d.ID ||
			c.Depth != 1 || c.Subject != "agt1" || len(c.Audience) != 1 || c.Audience[0] != a.Endpoint() {
			t.Fatalf("token claims %+v", c)
		}

		// Reading records: the caller and admins; another member sees nothing.
		rita := e.token("rita", "acme", false)
		expect(t, e.do("GET", "/v1/tenants/acme/delegations/"+d.ID, olga, nil), http.StatusOK)
		expect(t, e.do("GET", "/v1/tenants/acme/delegations/"+d.ID, alice, nil), http.StatusOK)
		expect(t, e.do("GET", "/v1/tenants/acme/delegations/"+d.ID, rita, nil), http.StatusNotFound, "not_found")

		// Refusals: unknown agent, undeclared capability, no policy (recorded, nothing sent).
		expect(t, e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt9", "sync")), http.StatusNotFound, "not_found")
		bad := delegate("agt1", "sync")
		bad["capability"] = "deploy"
		expect(t, e.do("POST", "/v1/tenants/acme/delegations", olga, bad), http.StatusBadRequest, "invalid")
		expect(t, e.do("POST", "/v1/tenants/acme/delegations", olga, map[string]any{"agentId": "agt1", "capability": "review_pr", "task": "x", "mode": "later"}), http.StatusBadRequest, "invalid")
		calls := a.Calls()
		expect(t, e.do("POST", "/v1/tenants/acme/delegations", rita, delegate("agt1", "sync")), http.StatusForbidden, "forbidden")
		if a.Calls() != calls {
			t.Fatal("a forbidden delegation reached the agent")
		}

		var page struct {
			Items      []delegation.Delegation `json:"items"`
			NextCursor string                  `json:"nextCursor"`
		}
		e.do("GET", "/v1/tenants/acme/delegations?status=rejected", alice, nil).json(t, &page)
		if len(page.Items) != 1 || page.Items[0].Caller != "rita" {
			t.Fatalf("rejected records %+v", page.Items)
		}
		e.do("GET", "/v1/tenants/acme/delegations", rita, nil).json(t, &page)
		if len(page.Items) != 1 || page.Items[0].Status != delegation.StatusRejected {
			t.Fatalf("rita sees %+v", page.Items)
		}
		// Paging, newest first, filtered by agent.
		expect(t, e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "sync")), http.StatusOK)
		e.do("GET", "/v1/tenants/acme/delegations?agentId=agt1&limit=2", alice, nil).json(t, &page)
		if len(page.Items) != 2 || page.NextCursor == "" || page.Items[0].ID <= page.Items[1].ID {
			t.Fatalf("first page %+v next %q", page.Items, page.NextCursor)
		}
		cursor := page.NextCursor
		last := e.do("GET", "/v1/tenants/acme/delegations?agentId=agt1&limit=2&cursor="+cursor, alice, nil)
		expect(t, last, http.StatusOK)
		page.Items, page.NextCursor = nil, ""
		last.json(t, &page)
		if len(page.Items) != 1 || page.Items[0].ID != d.ID || strings.Contains(string(last.body), "nextCursor") {
			t.Fatalf("second page %s", last.body)
		}
		// Bad list parameters are 400s naming them, never a silently different list.
		for _, q := range []string{
			"limit=0", "limit=201", "limit=x", "cursor=abc", "cursor=" + d.ID, "cursor=" + cursor + "x",
			"agentid=agt1", "status=running&status=failed", "tag=%zz", "agentId=agt1;x",
		} {
			r := e.do("GET", "/v1/tenants/acme/delegations?"+q, alice, nil)
			expect(t, r, http.StatusBadRequest, "invalid")
			name, _, _ := strings.Cut(q, "=")
			if !strings.Contains(string(r.body), name) {
				t.Fatalf("?%s: the error does not name %q: %s", q, name, r.body)
			}
		}
	})
}

// TestDelegationAsyncCallback: async answers 202 at once; the agent accepts, then posts its
// result to the callback URL: a wrong token is 404, an oversized result 413, the first result
// completes the record and a second one is 409.
func TestDelegationAsyncCallback(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		a := agenttest.New(t, agenttest.Answer(http.StatusAccepted, `{}`))
		_, olga := e.delegationSetup("acme", "agt1", a.Endpoint())
		r := e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "async"))
		expect(t, r, http.StatusAccepted)
		d := decodeDelegation(t, r)
		if d.ID == "" || r.header.Get("Location") != "/v1/tenants/acme/delegations/"+d.ID {
			t.Fatalf("async answer %+v %v", d, r.header)
		}
		e.waitStatus("acme", d.ID, olga, delegation.StatusAccepted)
		got := a.Last().Task
		if !strings.HasPrefix(got.CallbackURL, e.srv.URL+"/callbacks/delegations/acme/"+d.ID+"?token=") {
			t.Fatalf("callback URL %q", got.CallbackURL)
		}
		path := strings.TrimPrefix(got.CallbackURL, e.srv.URL)
		wrong := path[:strings.Index(path, "token=")+len("token=")] + "not-the-token"
		result := map[string]any{"status": "completed", "result": "LGTM"}
		expect(t, e.do("POST", wrong, "", result), http.StatusNotFound, "not_found")
		expect(t, e.do("POST", strings.Replace(path, "/acme/", "/other/", 1), "", result), http.StatusNotFound, "not_found")
		expect(t, e.do("POST", path, "", map[string]any{"status": "completed", "result": strings.Repeat("x", 2<<20)}), http.StatusRequestEntityTooLarge, "too_large")
		expect(t, e.do("POST", path, "", map[string]any{"status": "running"}), http.StatusBadRequest, "invalid")
		expect(t, e.do("POST", path, "", result), http.StatusNoContent)
		expect(t, e.do("POST", path, "", map[string]any{"status": "failed", "error": "again"}), http.StatusConflict, "conflict")
		done := e.waitStatus("acme", d.ID, olga, delegation.StatusCompleted)
		if string(done.Result) != `"LGTM"` {
			t.Fatalf("result %s", done.Result)
		}
	})
}

// TestDelegationFailureAndTimeout: a non-2xx answer fails the delegation with the body as the
// error; an agent that does not answer in time is a timeout.
func TestDelegationFailureAndTimeout(t *testing.T) {
	e := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	a := agenttest.New(t, agenttest.Answer(http.StatusUnprocessableEntity, `cannot review a draft`))
	_, olga := e.delegationSetup("acme", "agt1", a.Endpoint())
	r := e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "sync"))
	expect(t, r, http.StatusOK)
	if d := decodeDelegation(t, r); d.Status != delegation.StatusFailed || !strings.Contains(d.Error, "422: cannot review a draft") {
		t.Fatalf("failure %+v", d)
	}
	a.SetReply(agenttest.Hang)
	req := delegate("agt1", "sync")
	req["timeoutMs"] = 50
	r = e.do("POST", "/v1/tenants/acme/delegations", olga, req)
	expect(t, r, http.StatusOK)
	if d := decodeDelegation(t, r); d.Status != delegation.StatusTimeout {
		t.Fatalf("timeout %+v", d)
	}
}

// TestDelegationCallbackURLNeverFromHost: the callback URL (and the single-use token in it) is
// built from the configured base, never from the request's Host header; without
// delegation.publicUrl on a non-loopback listen address, async delegations are refused.
func TestDelegationCallbackURLNeverFromHost(t *testing.T) {
	e := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	a := agenttest.New(t, agenttest.Answer(http.StatusAccepted, `{}`))
	_, olga := e.delegationSetup("acme", "agt1", a.Endpoint())
	r := e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "async"), "Host", "evil.example")
	expect(t, r, http.StatusAccepted)
	e.waitStatus("acme", decodeDelegation(t, r).ID, olga, delegation.StatusAccepted)
	if got := a.Last().Task; !strings.HasPrefix(got.CallbackURL, e.srv.URL+"/callbacks/") {
		t.Fatalf("callback URL %q", got.CallbackURL)
	}

	public := newEnvWith(t, storagetest.Open(t, "sqlite"), envOptions{allowLoopback: true, listenAddr: "0.0.0.0:8080"})
	b := agenttest.New(t, agenttest.Answer(http.StatusAccepted, `{}`))
	_, olga = public.delegationSetup("acme", "agt1", b.Endpoint())
	r = public.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "async"), "Host", "evil.example")
	expect(t, r, http.StatusServiceUnavailable, "unavailable")
	if !strings.Contains(string(r.body), "delegation.publicUrl") {
		t.Fatalf("the refusal does not tell what to set: %s", r.body)
	}
	expect(t, public.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "sync")), http.StatusOK)
	if b.Calls() != 1 {
		t.Fatalf("the agent got %d calls", b.Calls())
	}
}

// TestDelegationAsyncDeadline: an async delegation has a deadline (its creation plus its
// timeout). Past it, reads report the accepted delegation as timeout, and the agent's late
// result is refused with 410 expired, its token worthless; a late result with no read before it
// records the timeout itself.
func TestDelegationAsyncDeadline(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		a := agenttest.New(t, agenttest.Answer(http.StatusAccepted, `{}`))
		alice, olga := e.delegationSetup("acme", "agt1", a.Endpoint())
		req := delegate("agt1", "async")
		req["timeoutMs"] = 1000
		r := e.do("POST", "/v1/tenants/acme/delegations", olga, req)
		expect(t, r, http.StatusAccepted)
		d := decodeDelegation(t, r)
		if d.Deadline.IsZero() || d.Deadline.Sub(d.CreatedAt) != time.Second {
			t.Fatalf("deadline %v created %v", d.Deadline, d.CreatedAt)
		}
		// Watched in the store, which does not settle: the 202 is recorded however late it comes.
		e.waitStored("acme", d.ID, delegation.StatusAccepted)
		got := waitCall(t, a, d.ID).Task
		path := e.callbackPath(t, "acme", d.ID, got)
		time.Sleep(time.Until(d.Deadline) + 50*time.Millisecond)

		var page struct {
			Items []delegation.Delegation `json:"items"`
		}
		e.do("GET", "/v1/tenants/acme/delegations", alice, nil).json(t, &page)
		if len(page.Items) != 1 || page.Items[0].Status != delegation.StatusTimeout {
			t.Fatalf("listed past the deadline: %+v", page.Items)
		}
		expect(t, e.do("POST", path, "", map[string]any{"status": "completed", "result": "late"}), http.StatusGone, "expired")
		r = e.do("GET", "/v1/tenants/acme/delegations/"+d.ID, olga, nil)
		expect(t, r, http.StatusOK)
		if late := decodeDelegation(t, r); late.Status != delegation.StatusTimeout || late.Result != nil {
			t.Fatalf("after the late result: %+v", late)
		}

		// Without any read first, the late callback itself is refused and times the record out.
		r = e.do("POST", "/v1/tenants/acme/delegations", olga, req)
		expect(t, r, http.StatusAccepted)
		d = decodeDelegation(t, r)
		// This delegation's own call and callback URL, not the first one's (which is also 410).
		got = waitCall(t, a, d.ID).Task
		path = e.callbackPath(t, "acme", d.ID, got)
		time.Sleep(time.Until(d.Deadline) + 50*time.Millisecond)
		expect(t, e.do("POST", path, "", map[string]any{"status": "completed"}), http.StatusGone, "expired")
		// Straight from the store: a read through the API would settle the record itself.
		if s := e.storedDelegation("acme", d.ID); s.Status != delegation.StatusTimeout || s.Result != nil {
			t.Fatalf("after the late result, with no read before it: %+v", s)
		}
	})
}

// TestDelegationRecordsTask: a record keeps the task as the caller sent it, cut to
// delegation.recordTaskBytes at a character's start (and says so), on every database; a
// refused delegation keeps none, a tenant that hides its tasks keeps none, and a server with
// the setting off (0) keeps none.
func TestDelegationRecordsTask(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		e := newEnvWith(t, storagetest.Open(t, dialect), envOptions{allowLoopback: true, delegation: delegation.Config{RecordTaskBytes: 20}})
		a := agenttest.New(t, agenttest.Answer(http.StatusOK, `{"result": "ok"}`))
		alice, olga := e.delegationSetup("acme", "agt1", a.Endpoint())
		send := func(token, task string, want int) delegation.Delegation {
			t.Helper()
			req := delegate("agt1", "sync")
			req["task"] = task
			r := e.do("POST", "/v1/tenants/acme/delegations", token, req)
			expect(t, r, want)
			if want != http.StatusOK {
				var page delegationPage
				e.do("GET", "/v1/tenants/acme/delegations?status=rejected&limit=1", alice, nil).json(t, &page)
				if len(page.Items) != 1 {
					t.Fatalf("no rejected record: %+v", page)
				}
				return page.Items[0]
			}
			d := decodeDelegation(t, r)
			// As stored: read back through the API.
			var stored delegation.Delegation
			e.do("GET", "/v1/tenants/acme/delegations/"+d.ID, alice, nil).json(t, &stored)
			if stored.Task != d.Task || stored.TaskTruncated != d.TaskTruncated {
				t.Fatalf("the record as answered %q/%v, as stored %q/%v", d.Task, d.TaskTruncated, stored.Task, stored.TaskTruncated)
			}
			return stored
		}
		// "é" takes bytes 20 and 21: the cut falls inside it and goes back to its start.
		if d := send(olga, "Review PR 12 of acmé/web", http.StatusOK); d.Task != "Review PR 12 of acm" || !d.TaskTruncated {
			t.Errorf("a long task recorded as %q, truncated %v", d.Task, d.TaskTruncated)
		}
		if got := a.Last().Task; got.Task != "Review PR 12 of acmé/web" {
			t.Errorf("the agent received %q: the cut is the record's only", got.Task)
		}
		if d := send(olga, "Lint it", http.StatusOK); d.Task != "Lint it" || d.TaskTruncated {
			t.Errorf("a short task recorded as %q, truncated %v", d.Task, d.TaskTruncated)
		}
		// A NUL (which Postgres text cannot hold) is recorded as U+FFFD; the agent gets it.
		if d := send(olga, "nul\x00here", http.StatusOK); d.Task != "nul\uFFFDhere" {
			t.Errorf("a task with a NUL recorded as %q", d.Task)
		}
		if got := a.Last().Task; got.Task != "nul\x00here" {
			t.Errorf("the agent received %q", got.Task)
		}
		// The list shows the tasks too, newest first.
		if page := e.listDelegations("acme", alice); len(page.Items) != 3 || page.Items[1].Task != "Lint it" {
			t.Errorf("the list: %+v", page.Items)
		}
		rita := e.token("rita", "acme", false)
		if d := send(rita, "Spam spam spam", http.StatusForbidden); d.Caller != "rita" || d.Task != "" {
			t.Errorf("a refused delegation's record: %+v", d)
		}
		hide := func(on bool) {
			t.Helper()
			if ten := e.patchTenant("acme", "hideDelegationTasks", on); ten.HideDelegationTasks != on {
				t.Fatalf("tenant after PATCH: %+v", ten)
			}
		}
		hide(true)
		if d := send(olga, "Sensitive", http.StatusOK); d.Task != "" || d.TaskTruncated {
			t.Errorf("a tenant that hides its tasks: recorded %q", d.Task)
		}
		if r := e.do("GET", "/v1/tenants/acme", e.admin(), nil); !strings.Contains(string(r.body), `"hideDelegationTasks":true`) {
			t.Errorf("GET tenant: %s", r.body)
		}
		hide(false)
		if d := send(olga, "Shown again", http.StatusOK); d.Task != "Shown again" {
			t.Errorf("after the tenant shows its tasks again: recorded %q", d.Task)
		}
		expect(t, e.do("PATCH", "/v1/tenants/acme", e.admin(), map[string]any{"hideDelegationTasks": "yes"}), http.StatusBadRequest, "invalid")

		// With the server's setting off, nothing is kept.
		off := newEnvWith(t, storagetest.Open(t, dialect), envOptions{allowLoopback: true})
		_, olga = off.delegationSetup("acme", "agt1", a.Endpoint())
		r := off.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "sync"))
		expect(t, r, http.StatusOK)
		if d := decodeDelegation(t, r); d.Task != "" {
			t.Errorf("delegation.recordTask off: recorded %q", d.Task)
		}
	})
}
