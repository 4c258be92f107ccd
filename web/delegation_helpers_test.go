package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentcards/agentcards/cards/agenttest"
	"github.com/agentcards/agentcards/cards/delegation"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/web/webtest"
)

// patience bounds every wait of the delegation tests for something that happens in the
// background: far longer than it takes on an idle machine, so that a loaded one (two shared
// cores, the race detector) never makes a correct server fail a test.
const patience = 15 * time.Second

// waitCall waits until the agent has received the call of delegation id, and returns it; a call
// that never comes fails the test instead of letting it go on with another delegation's call.
func waitCall(t testing.TB, a *agenttest.Agent, id string) agenttest.Request {
	t.Helper()
	var got agenttest.Request
	webtest.Eventually(t, patience, "the agent receives delegation "+id, func() bool {
		got = a.Last()
		return got.Task.DelegationID == id
	})
	return got
}

// waitStored waits until the stored record of delegation id (read without settling) has status
// want, and returns it.
func (e *env) waitStored(tenant, id string, want delegation.Status) delegation.Delegation {
	e.t.Helper()
	var d delegation.Delegation
	webtest.Eventually(e.t, patience, "delegation "+id+" recorded "+string(want), func() bool {
		d = e.storedDelegation(tenant, id)
		return d.Status == want
	})
	return d
}

// storedDelegation reads a delegation record straight from the store, without the settling that
// a read through the API does, to see what earlier requests recorded.
func (e *env) storedDelegation(tenant, id string) delegation.Delegation {
	e.t.Helper()
	d, err := storage.NewDelegationStore(e.db).Get(context.Background(), tenants.ID(tenant), id)
	if err != nil {
		e.t.Fatalf("stored delegation %s: %v", id, err)
	}
	return d
}

// callbackPath is the path (with the token query) of the callback URL the agent received for
// delegation id in tenant, failing the test if the URL is not this server's for that delegation.
func (e *env) callbackPath(t testing.TB, tenant, id string, got agenttest.Task) string {
	t.Helper()
	prefix := e.srv.URL + "/callbacks/delegations/" + tenant + "/" + id + "?token="
	if !strings.HasPrefix(got.CallbackURL, prefix) || len(got.CallbackURL) == len(prefix) {
		t.Fatalf("callback URL %q, want one starting %q with a token", got.CallbackURL, prefix)
	}
	return strings.TrimPrefix(got.CallbackURL, e.srv.URL)
}

// delegationPage is one page of GET .../delegations.
type delegationPage struct {
	Items      []delegation.Delegation `json:"items"`
	NextCursor string                  `json:"nextCursor"`
}

// listDelegations reads the delegations the token's subject may see in tenant.
func (e *env) listDelegations(tenant, token string) delegationPage {
	e.t.Helper()
	r := e.do("GET", "/v1/tenants/"+tenant+"/delegations", token, nil)
	expect(e.t, r, http.StatusOK)
	var page delegationPage
	r.json(e.t, &page)
	return page
}
