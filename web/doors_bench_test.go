package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/web/api"
	"github.com/agentcards/agentcards/web/client"
)

// BenchmarkDoorSearch: the same search (q, a page of 10 of 500 cards, SQLite) through each door
// over real HTTP on loopback: REST as curl would send it, the Go client, and an MCP tool call
// (whose server calls REST in process). The ratios to rest are what a door costs.
func BenchmarkDoorSearch(b *testing.B) {
	e := newEnvWith(b, storagetest.Open(b, "sqlite"), envOptions{})
	e.mkTenant("acme", "alice")
	alice := e.token("alice", "acme", false)
	batch := make([]api.CardInput, 500)
	for i := range batch {
		batch[i] = api.CardInput{AgentID: fmt.Sprintf("agent-%d", i), Name: fmt.Sprintf("Agent %d", i),
			Description: fmt.Sprintf("reviews code and plans trips, number %d", i), Protocols: []string{"http"}}
	}
	c, err := client.New(e.srv.URL, client.WithToken(alice), client.WithHTTPClient(e.srv.Client()))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.Cards.RegisterBatch(ctx, api.CardsRegisterBatch{Cards: batch}); err != nil {
		b.Fatal(err)
	}
	b.Run("rest", func(b *testing.B) {
		req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/v1/tenants/acme/cards?q=review+code&limit=10", nil)
		req.Header.Set("Authorization", "Bearer "+alice)
		for b.Loop() {
			resp, err := e.srv.Client().Do(req)
			if err != nil || resp.StatusCode != http.StatusOK {
				b.Fatal(err, resp)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
	b.Run("go-client", func(b *testing.B) {
		for b.Loop() {
			if r, err := c.Cards.Search(ctx, api.CardsSearch{Q: "review code", Limit: 10}); err != nil || len(r.Items) != 10 {
				b.Fatal(err)
			}
		}
	})
	// The MCP server alone: a tools/call POSTed as an MCP client sends it (the door is stateless:
	// no session to open first).
	b.Run("mcp-server", func(b *testing.B) {
		body := `{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "cards_search", "arguments": {"q": "review code", "limit": 10}}}`
		for b.Loop() {
			req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/mcp", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+alice)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("MCP-Protocol-Version", "2025-06-18")
			resp, err := e.srv.Client().Do(req)
			if err != nil || resp.StatusCode != http.StatusOK {
				b.Fatal(err, resp)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !strings.Contains(string(raw), `"structuredContent"`) {
				b.Fatalf("%s", raw)
			}
		}
	})
	// An MCP client's call: the go-sdk client and the server, both in this process.
	b.Run("mcp", func(b *testing.B) {
		s, err := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, &sdk.StreamableClientTransport{
			Endpoint: e.srv.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{alice, e.srv.Client().Transport}}, MaxRetries: -1,
		}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		args := json.RawMessage(`{"q": "review code", "limit": 10}`)
		for b.Loop() {
			res, err := s.CallTool(ctx, &sdk.CallToolParams{Name: "cards_search", Arguments: args})
			if err != nil || res.IsError {
				b.Fatal(err, res)
			}
		}
	})
}
