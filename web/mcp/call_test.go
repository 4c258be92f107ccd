package mcp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentcards/agentcards/web/client"
	"github.com/agentcards/agentcards/web/mcp"
	"github.com/agentcards/agentcards/web/webtest"
)

// TestToolCallForwards: a tool call is its request on the REST door, sent with the caller's
// token, its arguments where the route takes them; the answer is the output, as
// structuredContent and as the same JSON in text.
func TestToolCallForwards(t *testing.T) {
	door := webtest.NewScript(func(w http.ResponseWriter, r *http.Request, _ int) {
		webtest.Reply(w, http.StatusOK, `{"agentId": "rev", "name": "Reviewer", "protocols": ["http"], "capabilities": [], "resources": [],
			"tags": [], "visibility": "tenant", "id": "c-1", "revision": 3, "createdAt": "2026-05-04T10:00:00Z", "updatedAt": "2026-05-04T11:00:00Z"}`)
	})
	s, tok := session(t, door, beforeTheDay)
	res := call(t, s, "cards_update", `{"agentId": "rev", "patch": {"name": "Reviewer", "tags": null}, "ifRevision": 2}`)
	want := `{"agentId": "rev", "name": "Reviewer", "protocols": ["http"], "capabilities": [], "resources": [], "tags": [],
		"visibility": "tenant", "id": "c-1", "revision": 3, "createdAt": "2026-05-04T10:00:00Z", "updatedAt": "2026-05-04T11:00:00Z"}`
	webtest.JSONEqual(t, "structuredContent", structured(t, res), []byte(want))
	if tx := texts(res); len(tx) != 1 {
		t.Errorf("texts %q, want the answer alone", tx)
	} else {
		webtest.JSONEqual(t, "text", []byte(tx[0]), []byte(want))
	}
	got := door.Requests()
	if len(got) != 1 {
		t.Fatalf("%d requests, want 1", len(got))
	}
	r := got[0]
	if r.Method != "PATCH" || r.Target != "/v1/tenants/acme/cards/rev" || r.Header.Get("If-Match") != `"2"` ||
		r.Header.Get("Authorization") != "Bearer "+tok || r.Header.Get("Content-Type") != "application/merge-patch+json" {
		t.Errorf("sent %s %s, If-Match %q, Authorization %q, Content-Type %q", r.Method, r.Target, r.Header.Get("If-Match"),
			r.Header.Get("Authorization"), r.Header.Get("Content-Type"))
	}
	webtest.JSONEqual(t, "the patch sent", []byte(r.Body), []byte(`{"name": "Reviewer", "tags": null}`))
}

// TestToolErrors: a refusal of the REST door is a tool error whose text is its error body, code,
// message and request id; arguments the request does not take, or of the wrong type, and a
// required one missing, are refused as invalid without a request; a door that cannot be reached
// is unavailable.
func TestToolErrors(t *testing.T) {
	door := webtest.NewScript(func(w http.ResponseWriter, _ *http.Request, _ int) {
		webtest.Reply(w, http.StatusNotFound, `{"error": {"code": "not_found", "message": "card \"nope\" not found", "requestId": "req-9"}}`)
	})
	s, _ := session(t, door, beforeTheDay)
	toolError(t, call(t, s, "cards_get", `{"agentId": "nope"}`),
		`{"error": {"code": "not_found", "message": "card \"nope\" not found", "requestId": "req-9"}}`)
	for _, c := range []struct{ tool, args, want string }{
		{"cards_get", `{"agentId": "x", "extra": 1}`, `{"error": {"code": "invalid", "message": "arguments: extra: unknown member: invalid"}}`},
		// Names are exact, and every wrong one is named at once.
		{"cards_get", `{"AGENTID": "x"}`, `{"error": {"code": "invalid", "message": "arguments: AGENTID: unknown member (the name is agentId): invalid"}}`},
		{"cards_register", `{"agentID": "x", "name": "X", "Capabilities": [{"Name": "y"}], "colour": "red"}`, `{"error": {"code": "invalid",
			"message": "arguments: Capabilities: unknown member (the name is capabilities); agentID: unknown member (the name is agentId); colour: unknown member: invalid"}}`},
		{"cards_register", `{"agentId": "x", "name": "X", "capabilities": [{"Name": "y"}]}`, `{"error": {"code": "invalid",
			"message": "arguments: capabilities[0].Name: unknown member (the name is name): invalid"}}`},
		{"cards_search", `{"limit": "ten"}`, `{"error": {"code": "invalid", "message": "arguments: limit: expected a number, got string: invalid"}}`},
		{"cards_get", `{}`, `{"error": {"code": "invalid", "message": "agentId is required"}}`},
	} {
		toolError(t, call(t, s, c.tool, c.args), c.want)
	}
	if n := len(door.Requests()); n != 1 {
		t.Errorf("%d requests reached the door, want only the first", n)
	}

	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	server, err := mcp.NewServer(func(context.Context, *sdk.CallToolRequest) (*client.Client, error) {
		return client.New(gone.URL, client.WithToken("t"), client.WithTenant("acme"))
	}, mcp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st, ct := sdk.NewInMemoryTransports()
	ss, err := server.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res := call(t, cs, "cards_get", `{"agentId": "x"}`)
	if code := errorCode(t, res); code != "unavailable" {
		t.Errorf("a door that does not answer: %s, want unavailable", code)
	}
}

// TestStaleAnswer: an answer the service made from memory while its database did not answer
// says so first in text, and under _meta, with the service's note; the output follows as usual.
func TestStaleAnswer(t *testing.T) {
	door := webtest.NewScript(func(w http.ResponseWriter, _ *http.Request, n int) {
		if n == 0 {
			webtest.Reply(w, http.StatusOK, `{"state": "online"}`, "X-Agentcards-Stale", "database unreachable since 10:00:00Z")
			return
		}
		webtest.Reply(w, http.StatusOK, `{"state": "online"}`)
	})
	s, _ := session(t, door, beforeTheDay)
	res := call(t, s, "cards_heartbeat", `{"agentId": "rev"}`)
	tx := texts(res)
	if len(tx) != 2 || tx[0] != "Answered from memory, it may miss recent writes: database unreachable since 10:00:00Z" || tx[1] != `{"state":"online"}` {
		t.Errorf("texts %q", tx)
	}
	if note := res.Meta[mcp.StaleMeta]; note != "database unreachable since 10:00:00Z" {
		t.Errorf("_meta %v", res.Meta)
	}
	webtest.JSONEqual(t, "structuredContent", structured(t, res), []byte(`{"state": "online"}`))
	res = call(t, s, "cards_heartbeat", `{"agentId": "rev"}`)
	if tx := texts(res); len(tx) != 1 || res.Meta[mcp.StaleMeta] != nil {
		t.Errorf("a fresh answer after a stale one: %q, _meta %v", tx, res.Meta)
	}
}
