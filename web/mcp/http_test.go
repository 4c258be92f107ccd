package mcp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentcards/agentcards/web/mcp"
	"github.com/agentcards/agentcards/web/webtest"
)

// header sets a header on every request, as an MCP client configured with headers does.
type header struct {
	name, value string
	base        http.RoundTripper
}

func (h header) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if h.name == "Host" {
		r.Host = h.value
	} else if h.value != "" {
		r.Header.Set(h.name, h.value)
	}
	return h.base.RoundTrip(r)
}

// TestHTTPHandler: over streamable HTTP, each tool call goes to the REST handler in process with
// the bearer token of the HTTP request that carried it, whoever sends it and under whatever Host
// (the token admits, not the name the server was reached by). A call without a token reaches
// the REST door without one, which refuses it as it refuses any.
func TestHTTPHandler(t *testing.T) {
	door := webtest.NewScript(func(w http.ResponseWriter, r *http.Request, _ int) {
		if r.Header.Get("Authorization") == "" {
			webtest.Reply(w, http.StatusUnauthorized, `{"error": {"code": "unauthorized", "message": "authentication required"}}`)
			return
		}
		webtest.Reply(w, http.StatusOK, `{"state": "online"}`)
	})
	h, err := mcp.HTTPHandler(door, mcp.Options{Toolsets: []string{mcp.Discovery, mcp.Cards}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	connect := func(rt http.RoundTripper) *sdk.ClientSession {
		t.Helper()
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(),
			&sdk.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: &http.Client{Transport: rt}, MaxRetries: -1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	tok := webtest.Mint(t, webtest.Tokens(t), "alice", "acme", false)
	bob := webtest.Mint(t, webtest.Tokens(t), "bob", "acme", false)
	alice := connect(header{"Authorization", "Bearer " + tok, header{"Host", "registry.example.com", http.DefaultTransport}})
	webtest.JSONEqual(t, "alice's heartbeat", structured(t, call(t, alice, "cards_heartbeat", `{"agentId": "rev"}`)), []byte(`{"state": "online"}`))
	other := connect(header{"Authorization", "bearer " + bob, http.DefaultTransport})
	call(t, other, "cards_heartbeat", `{"agentId": "rev"}`)
	// Without a token there is no tenant to default to: it is named.
	nobody := connect(http.DefaultTransport)
	if code := errorCode(t, call(t, nobody, "cards_heartbeat", `{"agentId": "rev"}`)); code != "invalid" {
		t.Errorf("without a token or a tenant: %s, want invalid (not sent)", code)
	}
	if code := errorCode(t, call(t, nobody, "cards_heartbeat", `{"tenant": "acme", "agentId": "rev"}`)); code != "unauthorized" {
		t.Errorf("without a token: %s, want unauthorized", code)
	}

	got := door.Requests()
	if len(got) != 3 {
		t.Fatalf("%d requests reached the REST door, want 3", len(got))
	}
	for i, want := range []string{"Bearer " + tok, "Bearer " + bob, ""} {
		r := got[i]
		if r.Method != "POST" || r.Target != "/v1/tenants/acme/cards/rev/heartbeat" ||
			r.Header.Get("Authorization") != want || r.Header.Get("User-Agent") != "agentcards-mcp" {
			t.Errorf("call %d: %s %s, Authorization %q, User-Agent %q; want Authorization %q", i, r.Method, r.Target,
				r.Header.Get("Authorization"), r.Header.Get("User-Agent"), want)
		}
	}
}
