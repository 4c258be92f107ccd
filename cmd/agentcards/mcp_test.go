package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentcards/agentcards/web/webtest"
)

// mcpCall calls a tool and returns its structured content, failing on a tool error.
func mcpCall(t *testing.T, s *sdk.ClientSession, name, args string) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := s.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	if res.IsError {
		last, _ := res.Content[len(res.Content)-1].(*sdk.TextContent)
		t.Fatalf("%s: tool error %v", name, last.Text)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s: %s", name, raw)
	}
	return out
}

// connect opens an MCP session over the transport, closed when the test ends.
func connect(t *testing.T, tr sdk.Transport) *sdk.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestMCPBinary runs the MCP door of the built binary three ways, each with the go-sdk's client:
// streamable HTTP at /mcp of `serve`; stdio with `mcp --server`, which calls that server; and
// stdio with `mcp --subject --tenant`, the service in process on the same SQLite database. What
// one door writes, the others read.
func TestMCPBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := binary(t)
	work := t.TempDir()
	env := append(cleanEnv(), "AGENTCARDS_SERVER_ADDR=127.0.0.1:0", "AGENTCARDS_SERVER_METRICS_ADDR=127.0.0.1:0",
		"AGENTCARDS_MCP_TOOLSETS=discovery,cards,admin,old")
	srv := startServer(t, bin, work, env)
	root := mint(t, bin, work, env, "--subject", "root", "--platform-admin")
	c := webtest.Client{BaseURL: srv.base}
	c.CreateTenant(t, root, "acme", "alice")
	alice := mint(t, bin, work, env, "--subject", "alice", "--tenant", "acme")

	// Streamable HTTP, with the bearer token.
	httpSession := connect(t, &sdk.StreamableClientTransport{Endpoint: srv.base + "/mcp",
		HTTPClient: &http.Client{Transport: bearerTransport{alice}}, MaxRetries: -1})
	mcpCall(t, httpSession, "cards_register", `{"agentId": "rev", "name": "Code Reviewer", "protocols": ["http"],
		"capabilities": [{"name": "review_pr"}], "endpoint": "http://127.0.0.1:9/task"}`)

	// stdio, calling the server with the token of a file.
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(alice+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	remote := exec.Command(bin, "mcp", "--server", srv.base, "--token-file", tokenFile, "--toolsets", "discovery,cards,admin,old")
	remote.Dir, remote.Env = work, cleanEnv()
	remoteSession := connect(t, &sdk.CommandTransport{Command: remote})
	found := mcpCall(t, remoteSession, "cards_search", `{"q": "review"}`)
	if found["total"] != float64(1) {
		t.Errorf("search through mcp --server: %v", found)
	}
	mcpCall(t, remoteSession, "cards_update", `{"agentId": "rev", "patch": {"description": "reviews pull requests"}}`)

	// stdio, in process on the server's database, as alice in acme.
	local := exec.Command(bin, "mcp", "--subject", "alice", "--tenant", "acme", "--toolsets", "discovery,cards,admin,old")
	local.Dir, local.Env = work, cleanEnv()
	localSession := connect(t, &sdk.CommandTransport{Command: local})
	got := mcpCall(t, localSession, "cards_get", `{"agentId": "rev"}`)
	if got["description"] != "reviews pull requests" || got["revision"] != float64(2) {
		t.Errorf("cards_get in process: %v", got)
	}
	res, err := localSession.CallTool(context.Background(), &sdk.CallToolParams{Name: "tenants_list", Arguments: map[string]any{}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, `"forbidden"`) {
		t.Errorf("tenants_list as alice in process: %v %+v", err, res)
	}
}

type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}
