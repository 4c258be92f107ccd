package web_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/agenttest"
)

// sdkAgent is an agent made with a2a-go's own server on loopback, serving its agent card at
// /.well-known/agent-card.json as a2a-go serves it: a 1.0 agent (a2asrv) its 1.0 card, a 0.3 one
// (a2av0) the card with its 0.3 members beside the 1.0 ones. The inbox keeps what it was sent.
type sdkAgent struct {
	*inbox
	*agenttest.Agent
}

func newSDKAgent(t *testing.T, version string) sdkAgent {
	t.Helper()
	in := &inbox{name: "sdk " + version}
	a := agenttest.New(t, nil)
	iface := a2a.NewAgentInterface(a.URL+"/rpc", a2a.TransportProtocolJSONRPC)
	card := a2a.AgentCard{
		Name: "SDK agent " + version, Description: "Answers what it is sent.", Version: "1.0.0",
		SupportedInterfaces: []*a2a.AgentInterface{iface},
		DefaultInputModes:   []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		Skills: []a2a.AgentSkill{{ID: "answer", Name: "Answer", Description: "Answers a message.", Tags: []string{"chat"}}},
	}
	switch version {
	case "1.0":
		a.Handle("/rpc", agenttest.JSONRPC10.Handler(in))
	case "0.3":
		iface.ProtocolVersion = a2av0.Version
		a.Handle("/rpc", agenttest.JSONRPC03.Handler(in))
	default:
		t.Fatalf("version %q", version)
	}
	a.ServeCard(&card)
	return sdkAgent{inbox: in, Agent: a}
}

// TestA2AImportFromSDKAgents: the cards of agents made with a2a-go's own servers, one speaking
// A2A 1.0 and one 0.3, import by URL; the stored card declares the agent's interface in its
// version; a2a-go's resolver reads the card we serve for it (as a client of the agent's version,
// sending no version header, as the SDKs' resolvers do) and the message its client sends reaches
// the agent.
func TestA2AImportFromSDKAgents(t *testing.T) {
	agents := map[string]sdkAgent{"1.0": newSDKAgent(t, "1.0"), "0.3": newSDKAgent(t, "0.3")}
	forEachDialect(t, func(t *testing.T, e *env) {
		e.allowLoopback()
		e.mkTenant("acme", "alice")
		alice := e.token("alice", "acme", false)
		ctx := context.Background()
		http0 := e.srv.Client()
		for _, version := range []string{"1.0", "0.3"} {
			agent := agents[version]
			id := "sdk-" + map[string]string{"1.0": "v10", "0.3": "v03"}[version]
			r := e.do("POST", "/v1/tenants/acme/cards/import", alice, map[string]any{
				"agentId": id, "url": agent.URL + "/.well-known/agent-card.json", "visibility": "public"})
			expect(t, r, http.StatusCreated)
			var stored struct {
				Endpoint string
				A2A      struct {
					Interfaces []struct{ URL, ProtocolBinding, ProtocolVersion string }
					Import     struct{ Format, URL string }
				}
			}
			r.json(t, &stored)
			ifaces := stored.A2A.Interfaces
			if len(ifaces) != 1 || ifaces[0].URL != agent.URL+"/rpc" || ifaces[0].ProtocolBinding != "JSONRPC" ||
				a2aVersion(ifaces[0].ProtocolVersion) != version || stored.Endpoint != agent.URL+"/rpc" {
				t.Fatalf("%s: stored card %+v", version, stored)
			}

			resolver := agentcard.NewResolver(http0)
			newClient := func(card *a2a.AgentCard) (*a2aclient.Client, error) {
				return a2aclient.NewFromCard(ctx, card, a2aclient.WithJSONRPCTransport(http0))
			}
			if version == "0.3" {
				resolver = &agentcard.Resolver{Client: http0, CardParser: a2av0.NewAgentCardParser()}
				newClient = func(card *a2a.AgentCard) (*a2aclient.Client, error) {
					return a2aclient.NewFromCard(ctx, card, a2aclient.WithDefaultsDisabled(),
						a2av0.WithJSONRPCTransport(a2av0.JSONRPCTransportConfig{Client: http0}))
				}
			}
			card, err := resolver.Resolve(ctx, e.srv.URL+"/a2a/acme/"+id)
			if err != nil {
				t.Fatalf("%s: resolve our card: %v", version, err)
			}
			client, err := newClient(card)
			if err != nil {
				t.Fatalf("%s: client from our card: %v", version, err)
			}
			text := "imported " + version + " on " + t.Name()
			res, err := client.SendMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))})
			_ = client.Destroy()
			if err != nil {
				t.Fatalf("%s: send: %v", version, err)
			}
			msg, ok := res.(*a2a.Message)
			if got := agent.messages(); !ok || len(msg.Parts) == 0 || msg.Parts[0].Text() != agent.name+" got "+text ||
				len(got) == 0 || got[len(got)-1] != text {
				t.Fatalf("%s: answer %#v; the agent got %q", version, res, got)
			}
		}
	})
}

// a2aVersion is a protocolVersion as major.minor ("0.3.0" is 0.3).
func a2aVersion(v string) string {
	version, _ := cards.A2AVersion(v)
	return version
}
