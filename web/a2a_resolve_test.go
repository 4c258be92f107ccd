package web_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"

	"github.com/agentcards/agentcards/cards/agenttest"
)

// TestA2AResolvedCardReachesAgents resolves the cards we serve with a2a-go's resolver, as a 1.0
// client and as a 0.3 client, and sends a message through the client each builds, to agents
// made with a2a-go's own servers on loopback: a 1.0 one (a2asrv) and a 0.3 one (a2av0). Each
// message must reach the agent of the client's version, through our default card (the hybrid for
// the 0.3 client, which sends no version, or one the agent lacks) and through the explicit forms;
// and a 0.3 client that asks for the 0.3 card of a 1.0-only agent is not led to the 1.0 endpoint.
func TestA2AResolvedCardReachesAgents(t *testing.T) {
	agent10, agent03 := &inbox{name: "v1.0"}, &inbox{name: "v0.3"}
	srv10 := agenttest.NewA2A(t, agenttest.JSONRPC10, agent10)
	srv03 := agenttest.NewA2A(t, agenttest.JSONRPC03, agent03)
	iface := func(url, version string) map[string]any {
		return map[string]any{"url": url, "protocolBinding": "JSONRPC", "protocolVersion": version}
	}

	forEachDialect(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		alice := e.token("alice", "acme", false)
		for id, ifaces := range map[string][]any{
			"only10": {iface(srv10.URL, "1.0")},
			"only03": {iface(srv03.URL, "0.3")},
			"both":   {iface(srv10.URL, "1.0"), iface(srv03.URL, "0.3")},
		} {
			c := map[string]any{"agentId": id, "name": "Agent " + id, "visibility": "public",
				"capabilities": []any{map[string]any{"name": "echo"}}, "a2a": map[string]any{"interfaces": ifaces}}
			expect(t, e.do("PUT", "/v1/tenants/acme/cards/"+id, alice, c), http.StatusCreated)
		}
		ctx := context.Background()
		http0 := e.srv.Client()
		resolver10 := agentcard.NewResolver(http0)
		resolver03 := &agentcard.Resolver{Client: http0, CardParser: a2av0.NewAgentCardParser()}
		client10 := func(card *a2a.AgentCard) (*a2aclient.Client, error) {
			return a2aclient.NewFromCard(ctx, card, a2aclient.WithJSONRPCTransport(http0))
		}
		client03 := func(card *a2a.AgentCard) (*a2aclient.Client, error) {
			return a2aclient.NewFromCard(ctx, card, a2aclient.WithDefaultsDisabled(),
				a2av0.WithJSONRPCTransport(a2av0.JSONRPCTransportConfig{Client: http0}))
		}
		for _, tc := range []struct {
			name     string
			id       string
			resolver *agentcard.Resolver
			version  string // the A2A-Version the resolver sends; "" none
			client   func(*a2a.AgentCard) (*a2aclient.Client, error)
			reaches  *inbox
		}{
			{"1.0 client, default card", "only10", resolver10, "", client10, agent10},
			{"1.0 client, 1.0 card", "only10", resolver10, "1.0", client10, agent10},
			{"1.0 client, hybrid card", "both", resolver10, "", client10, agent10},
			{"0.3 client, hybrid card", "only03", resolver03, "", client03, agent03},
			{"0.3 client, hybrid card of both", "both", resolver03, "", client03, agent03},
			{"0.3 client, 0.3 card", "both", resolver03, "0.3", client03, agent03},
			// As @a2a-js/sdk 1.3 asks: A2A-Version 1.0 of an agent that speaks only 0.3.
			{"0.3 client asking for 1.0, 0.3-only agent", "only03", resolver03, "1.0", client03, agent03},
		} {
			var opts []agentcard.ResolveOption
			if tc.version != "" {
				opts = append(opts, agentcard.WithRequestHeader("A2A-Version", tc.version))
			}
			card, err := tc.resolver.Resolve(ctx, e.srv.URL+"/a2a/acme/"+tc.id, opts...)
			if err != nil {
				t.Fatalf("%s: resolve: %v", tc.name, err)
			}
			client, err := tc.client(card)
			if err != nil {
				t.Fatalf("%s: client from the resolved card: %v", tc.name, err)
			}
			text := tc.name + " on " + t.Name()
			res, err := client.SendMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))})
			if err != nil {
				t.Fatalf("%s: send: %v", tc.name, err)
			}
			msg, ok := res.(*a2a.Message)
			if got := tc.reaches.messages(); !ok || len(msg.Parts) == 0 || msg.Parts[0].Text() != tc.reaches.name+" got "+text ||
				len(got) == 0 || got[len(got)-1] != text {
				t.Fatalf("%s: answer %#v; the agent got %q", tc.name, res, got)
			}
			_ = client.Destroy()
		}

		// A 0.3 client that asks for the 0.3 card of a 1.0-only agent gets the agent's 1.0 card,
		// as the agent would give it: it lists no 0.3 interface, so the 0.3 client is not sent to
		// an endpoint that does not speak 0.3.
		card, err := resolver03.Resolve(ctx, e.srv.URL+"/a2a/acme/only10", agentcard.WithRequestHeader("A2A-Version", "0.3"))
		if err == nil {
			if _, err = client03(card); err == nil {
				t.Fatalf("a 0.3 client of a 1.0-only agent was built from %+v", card)
			}
		}
	})
}
