package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"testing"

	"github.com/agentcards/agentcards/web/api"
	"github.com/agentcards/agentcards/web/client"
	"github.com/agentcards/agentcards/web/webtest"
)

// TestRequestsOnTheWire: each typed method sends its request as the REST door takes it: the
// main route's method and path (the tenant of the token where the input names none, path
// parameters escaped), query parameters (a list repeated, zero values left out, view fields
// never sent), If-Match from ifRevision, the body (a field that is the whole body, else the
// members, {} for a POST with none), its content type, and the headers every request carries;
// the answer decodes into the output.
func TestRequestsOnTheWire(t *testing.T) {
	for _, c := range wireCases(context.Background()) {
		t.Run(c.name, func(t *testing.T) { checkOnTheWire(t, c) })
	}
}

// wireCase is one typed method's call and what it must send and answer.
type wireCase struct {
	name                 string
	call                 func(c *client.Client) (any, error)
	answer               string // a 200's body; "" is a 204
	method, target, body string // body "" is none
	contentType, ifMatch string
	want                 string // the output, as JSON
}

// wireCases are the calls TestRequestsOnTheWire makes, with ctx, each with the request it must
// send and the output it must answer.
func wireCases(ctx context.Context) []wireCase {
	no := false
	return []wireCase{
		{name: "cards.get", call: func(c *client.Client) (any, error) { return c.Cards.Get(ctx, api.CardRef{AgentID: "code reviewer/1"}) },
			answer: `{"agentId": "code reviewer/1", "name": "CR", "revision": 3}`,
			method: "GET", target: "/v1/tenants/acme/cards/code%20reviewer%2F1"},
		{name: "cards.search", call: func(c *client.Client) (any, error) {
			return c.Cards.Search(ctx, api.CardsSearch{Scope: api.Scope{Tenant: "beta"}, Protocol: []string{"http", "a2a"}, Q: "review pr",
				Limit: 5, Online: &no, Fields: []string{"name"}})
		}, answer: `{"total": 7, "items": [], "nextCursor": "abc"}`,
			method: "GET", target: "/v1/tenants/beta/cards?limit=5&online=false&protocol=http&protocol=a2a&q=review+pr",
			want: `{"total": 7, "items": [], "nextCursor": "abc"}`},
		{name: "cards.register", call: func(c *client.Client) (any, error) {
			return c.Cards.Register(ctx, api.CardsRegister{CardInput: api.CardInput{AgentID: "rev", Name: "Reviewer", Protocols: []string{"http"}}})
		}, answer: `{"agentId": "rev", "name": "Reviewer", "revision": 1}`,
			method: "POST", target: "/v1/tenants/acme/cards", contentType: "application/json",
			body: `{"agentId": "rev", "name": "Reviewer", "protocols": ["http"]}`},
		{name: "cards.register_batch", call: func(c *client.Client) (any, error) {
			return c.Cards.RegisterBatch(ctx, api.CardsRegisterBatch{Cards: []api.CardInput{{AgentID: "a", Name: "A"}}})
		}, answer: `{"items": [], "total": 1}`,
			method: "POST", target: "/v1/tenants/acme/cards:batch", contentType: "application/json",
			body: `[{"agentId": "a", "name": "A"}]`, want: `{"items": [], "total": 1}`},
		{name: "cards.replace", call: func(c *client.Client) (any, error) {
			return c.Cards.Replace(ctx, api.CardsReplace{CardInput: api.CardInput{AgentID: "rev", Name: "R2"}, IfRevision: 4})
		}, answer: `{"agentId": "rev", "name": "R2", "revision": 5}`,
			method: "PUT", target: "/v1/tenants/acme/cards/rev", contentType: "application/json", ifMatch: `"4"`,
			body: `{"agentId": "rev", "name": "R2"}`},
		{name: "cards.update", call: func(c *client.Client) (any, error) {
			return c.Cards.Update(ctx, api.CardsUpdate{AgentID: "rev", Patch: json.RawMessage(`{"tags": null}`), IfRevision: 2})
		}, answer: `{"agentId": "rev", "name": "R2", "revision": 3}`,
			method: "PATCH", target: "/v1/tenants/acme/cards/rev", contentType: "application/merge-patch+json", ifMatch: `"2"`,
			body: `{"tags": null}`},
		{name: "cards.remove", call: func(c *client.Client) (any, error) { return c.Cards.Remove(ctx, api.CardsRemove{AgentID: "rev"}) },
			method: "DELETE", target: "/v1/tenants/acme/cards/rev", want: `{}`},
		{name: "cards.heartbeat", call: func(c *client.Client) (any, error) { return c.Cards.Heartbeat(ctx, api.CardRef{AgentID: "rev"}) },
			answer: `{"state": "online"}`, method: "POST", target: "/v1/tenants/acme/cards/rev/heartbeat", contentType: "application/json",
			body: `{}`, want: `{"state": "online"}`},
		{name: "roles.revoke", call: func(c *client.Client) (any, error) {
			return c.Roles.Revoke(ctx, api.RoleRevoke{Subject: "bob", Role: "reader"})
		}, method: "DELETE", target: "/v1/tenants/acme/roles?role=reader&subject=bob", want: `{}`},
		{name: "access.check", call: func(c *client.Client) (any, error) {
			return c.Access.Check(ctx, api.AccessCheck{Action: "cards:read", Object: "cards/rev"})
		}, answer: `{"allowed": true}`, method: "POST", target: "/v1/tenants/acme/authorize", contentType: "application/json",
			body: `{"action": "cards:read", "object": "cards/rev"}`},
		{name: "delegations.list", call: func(c *client.Client) (any, error) {
			return c.Delegations.List(ctx, api.DelegationsList{Status: "completed", AgentID: "rev", Limit: 10})
		}, answer: `{"items": []}`, method: "GET", target: "/v1/tenants/acme/delegations?agentId=rev&limit=10&status=completed",
			want: `{"items": []}`},
		{name: "tenants.get", call: func(c *client.Client) (any, error) { return c.Tenants.Get(ctx, api.TenantRef{Tenant: "beta"}) },
			answer: `{"id": "beta", "name": "Beta"}`, method: "GET", target: "/v1/tenants/beta"},
		{name: "keys.list", call: func(c *client.Client) (any, error) { return c.Keys.List(ctx, api.KeysList{}) },
			answer: `{"keys": [{"kty": "EC"}]}`, method: "GET", target: "/.well-known/jwks.json", want: `{"keys": [{"kty": "EC"}]}`},
		// The A2A card is answered as the service wrote it, byte for byte.
		{name: "a2a.card", call: func(c *client.Client) (any, error) {
			raw, err := c.A2A.Card(ctx, api.A2ACard{AgentID: "rev", Version: "0.3"})
			return string(raw), err
		}, answer: `{"name":  "Reviewer" ,"skills":[]}`, method: "GET", target: "/a2a/acme/rev/.well-known/agent-card.json?version=0.3",
			want: `"{\"name\":  \"Reviewer\" ,\"skills\":[]}"`},
	}
}

// checkOnTheWire makes c's call with a client of a scripted server, which answers c.answer,
// and checks the one request it sent and the output it answered.
func checkOnTheWire(t *testing.T, c wireCase) {
	s := webtest.StartScript(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		if c.answer == "" {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		webtest.Reply(w, http.StatusOK, c.answer)
	})
	tok := aliceToken(t)
	cl, err := client.New(s.URL, client.WithToken(tok), client.WithUserAgent("test-agent/1"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.call(cl)
	if err != nil {
		t.Fatal(err)
	}
	got := s.Requests()
	if len(got) != 1 {
		t.Fatalf("%d requests, want 1", len(got))
	}
	r := got[0]
	if r.Method != c.method || r.Target != c.target {
		t.Errorf("sent %s %s, want %s %s", r.Method, r.Target, c.method, c.target)
	}
	if c.body == "" && r.Body != "" {
		t.Errorf("sent the body %s, want none", r.Body)
	} else if c.body != "" {
		webtest.JSONEqual(t, "body", []byte(r.Body), []byte(c.body))
	}
	for k, want := range map[string]string{"Content-Type": c.contentType, "If-Match": c.ifMatch, "Accept": "application/json",
		"User-Agent": "test-agent/1", "Authorization": "Bearer " + tok} {
		if h := r.Header.Get(k); h != want {
			t.Errorf("%s %q, want %q", k, h, want)
		}
	}
	if c.want != "" {
		webtest.SameJSON(t, "output", out, json.RawMessage(c.want))
	}
}

// TestTenantOfRequests: a request whose input names no tenant goes to the client's: the one
// given with WithTenant, else the token's tenant claim; with neither it is refused unsent. An
// input that names one goes there.
func TestTenantOfRequests(t *testing.T) {
	s := webtest.StartScript(t, func(w http.ResponseWriter, _ *http.Request, _ int) { webtest.Reply(w, http.StatusOK, `{}`) })
	ctx := context.Background()
	target := func(c *client.Client, in api.CardRef) string {
		t.Helper()
		before := len(s.Requests())
		if _, err := c.Cards.Get(ctx, in); err != nil {
			t.Fatal(err)
		}
		return s.Requests()[before].Target
	}
	alice := newClient(t, s)
	if alice.Tenant() != "acme" || target(alice, api.CardRef{AgentID: "x"}) != "/v1/tenants/acme/cards/x" {
		t.Errorf("with alice's token: tenant %q", alice.Tenant())
	}
	if got := target(alice, api.CardRef{Scope: api.Scope{Tenant: "beta"}, AgentID: "x"}); got != "/v1/tenants/beta/cards/x" {
		t.Errorf("an input naming beta went to %s", got)
	}
	other := newClient(t, s, client.WithTenant("gamma"))
	if got := target(other, api.CardRef{AgentID: "x"}); got != "/v1/tenants/gamma/cards/x" {
		t.Errorf("WithTenant gamma went to %s", got)
	}
	root, err := client.New(s.URL, client.WithToken(webtest.Mint(t, webtest.Tokens(t), "root", "", true)))
	if err != nil {
		t.Fatal(err)
	}
	sent := len(s.Requests())
	_, err = root.Cards.Get(ctx, api.CardRef{AgentID: "x"})
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Code != "invalid" || ce.Status != 0 || ce.Request != "cards.get" ||
		ce.Message != "tenant is required, and the token names none" {
		t.Errorf("no tenant anywhere: %#v", err)
	}
	if len(s.Requests()) != sent {
		t.Error("a request without a tenant was sent")
	}
}

// TestRefusedUnsent: an input the service would refuse for its shape is refused before anything
// is sent, every problem named at once: a required field left empty, a value outside a field's
// enum (alone or in a list) or bounds; and an input of another request's type, a request the Go
// client does not make.
func TestRefusedUnsent(t *testing.T) {
	s := webtest.StartScript(t, func(w http.ResponseWriter, _ *http.Request, _ int) { webtest.Reply(w, http.StatusOK, `{}`) })
	c := newClient(t, s)
	ctx := context.Background()
	for _, r := range []struct {
		name string
		call func() error
		want string // the *client.Error's text; "" for an error of another type
	}{
		{"required", func() error { _, err := c.Cards.Get(ctx, api.CardRef{}); return err },
			"cards.get: agentId is required (invalid)"},
		{"required in the body", func() error {
			_, err := c.Delegations.Create(ctx, api.DelegationsCreate{AgentID: "x", Capability: "c"})
			return err
		}, "delegations.create: task is required (invalid)"},
		{"enum", func() error {
			_, err := c.Delegations.Create(ctx, api.DelegationsCreate{AgentID: "x", Capability: "c", Task: "t", Mode: "later"})
			return err
		}, `delegations.create: mode: "later" is not one of sync, async (invalid)`},
		{"enum of a list", func() error {
			_, err := c.Cards.Search(ctx, api.CardsSearch{Status: []string{"active", "gone"}})
			return err
		}, `cards.search: status: "gone" is not one of active, deprecated, disabled (invalid)`},
		{"bounds", func() error { _, err := c.Cards.Search(ctx, api.CardsSearch{Limit: 500}); return err },
			`cards.search: limit: 500 is not between 1 and 100 (invalid)`},
		{"below a bound", func() error {
			_, err := c.Delegations.Create(ctx, api.DelegationsCreate{AgentID: "x", Capability: "c", Task: "t", TimeoutMS: -1})
			return err
		}, `delegations.create: timeoutMs: -1 is less than 0 (invalid)`},
		{"every problem", func() error {
			_, err := c.Delegations.Create(ctx, api.DelegationsCreate{Capability: "c", Mode: "later", Transport: "smoke"})
			return err
		}, `delegations.create: agentId is required; task is required; mode: "later" is not one of sync, async; transport: "smoke" is not one of http, a2a (invalid)`},
		{"another request's input", func() error { return c.Call(ctx, "cards.get", api.CardsRemove{AgentID: "x"}, nil) }, ""},
		{"not a Go client request", func() error { return c.Call(ctx, "service.health", api.Probe{}, nil) }, ""},
		{"no such request", func() error { return c.Call(ctx, "cards.teleport", api.CardRef{AgentID: "x"}, nil) }, ""},
	} {
		err := r.call()
		var ce *client.Error
		switch {
		case err == nil:
			t.Errorf("%s: no error", r.name)
		case r.want == "" && errors.As(err, &ce):
			t.Errorf("%s: %v is a *client.Error, a refusal of the service's", r.name, err)
		case r.want != "" && (!errors.As(err, &ce) || ce.Status != 0 || ce.Error() != r.want):
			t.Errorf("%s: %v, want %q", r.name, err, r.want)
		}
	}
	if n := len(s.Requests()); n != 0 {
		t.Errorf("%d requests sent, want none", n)
	}
}

// TestNew: the server must be an http or https URL; a trailing slash is not doubled.
func TestNew(t *testing.T) {
	for _, base := range []string{"", "localhost:8080", "ftp://example.com", "http://", "https:///v1"} {
		if _, err := client.New(base); err == nil {
			t.Errorf("New(%q) accepted", base)
		}
	}
	s := webtest.StartScript(t, func(w http.ResponseWriter, _ *http.Request, _ int) { webtest.Reply(w, http.StatusOK, `{}`) })
	c, err := client.New(s.URL+"/", client.WithToken(aliceToken(t)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Cards.Get(context.Background(), api.CardRef{AgentID: "x"}); err != nil {
		t.Fatal(err)
	}
	if got := s.Requests()[0].Target; got != "/v1/tenants/acme/cards/x" {
		t.Errorf("sent to %s", got)
	}
}

// TestFields: an input's fields as every door sees them, embedded structs' in place.
func TestFields(t *testing.T) {
	type field struct {
		Name, In  string
		OmitEmpty bool
		Enum      []string
		Index     []int
	}
	var got []field
	for _, f := range client.Fields(reflect.TypeFor[api.CardsRemove]()) {
		got = append(got, field{f.Name, f.In, f.OmitEmpty, f.Enum, f.Index})
	}
	want := []field{
		{Name: "tenant", In: "path", OmitEmpty: true, Index: []int{0, 0}},
		{Name: "agentId", In: "path", Index: []int{1}},
		{Name: "ifRevision", In: "header", OmitEmpty: true, Index: []int{2}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("CardsRemove's fields: %+v, want %+v", got, want)
	}
	// A body member of an embedded struct: its index goes through the struct; its enum is listed.
	var visibility *client.Field
	for _, f := range client.Fields(reflect.TypeFor[api.CardsRegister]()) {
		if f.Name == "visibility" {
			visibility = &f
		}
	}
	if visibility == nil || visibility.In != "" || !visibility.OmitEmpty ||
		!reflect.DeepEqual(visibility.Enum, []string{"private", "tenant", "public"}) || !reflect.DeepEqual(visibility.Index, []int{1, 11}) {
		t.Errorf("CardsRegister's visibility: %+v", visibility)
	}
}
