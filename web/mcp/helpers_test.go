package mcp_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentcards/agentcards/web/client"
	"github.com/agentcards/agentcards/web/mcp"
	"github.com/agentcards/agentcards/web/webtest"
)

// beforeTheDay is a moment the old names still answer at; theDay the one they stop.
var (
	theDay       = time.Date(2027, time.March, 1, 0, 0, 0, 0, time.UTC)
	beforeTheDay = theDay.Add(-time.Second)
)

// session serves every toolset over the go-sdk's in-memory transports, each call made with the
// Go client, with alice's token (tenant acme), over real HTTP to door, which it starts; now is the
// old names' clock.
func session(t *testing.T, door *webtest.Script, now time.Time) (*sdk.ClientSession, string) {
	t.Helper()
	return sessionOf(t, door, now, mcp.All)
}

// sessionOf is session serving the toolsets named (none: the default ones).
func sessionOf(t *testing.T, door *webtest.Script, now time.Time, toolsets ...string) (*sdk.ClientSession, string) {
	t.Helper()
	door.Start(t)
	tok := webtest.Mint(t, webtest.Tokens(t), "alice", "acme", false)
	server, err := mcp.NewServer(func(context.Context, *sdk.CallToolRequest) (*client.Client, error) {
		return client.New(door.URL, client.WithToken(tok))
	}, mcp.Options{Version: "1.2.3", Now: func() time.Time { return now }, Toolsets: toolsets})
	if err != nil {
		t.Fatal(err)
	}
	st, ct := sdk.NewInMemoryTransports()
	ss, err := server.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs, tok
}

// call calls a tool with arguments given as JSON.
func call(t *testing.T, s *sdk.ClientSession, name, args string) *sdk.CallToolResult {
	t.Helper()
	res, err := s.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

// texts are a result's text contents.
func texts(res *sdk.CallToolResult) []string {
	var out []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			out = append(out, tc.Text)
		}
	}
	return out
}

// structured is a result's structuredContent as JSON.
func structured(t *testing.T, res *sdk.CallToolResult) []byte {
	t.Helper()
	if res.IsError {
		t.Fatalf("a tool error: %s", strings.Join(texts(res), "\n"))
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// toolError checks that res is a tool error whose last text is want, the REST error body.
func toolError(t *testing.T, res *sdk.CallToolResult, want string) {
	t.Helper()
	tx := texts(res)
	if !res.IsError || len(tx) == 0 {
		t.Fatalf("want a tool error, got %v", tx)
	}
	webtest.JSONEqual(t, "tool error", []byte(tx[len(tx)-1]), []byte(want))
}

// errorCode is the code of a tool error's REST error body.
func errorCode(t *testing.T, res *sdk.CallToolResult) string {
	t.Helper()
	tx := texts(res)
	if !res.IsError || len(tx) == 0 {
		t.Fatalf("want a tool error, got %v", tx)
	}
	var body struct {
		Error struct{ Code string }
	}
	if err := json.Unmarshal([]byte(tx[len(tx)-1]), &body); err != nil {
		t.Fatalf("tool error %q is not the REST error body", tx[len(tx)-1])
	}
	return body.Error.Code
}
