package agenttest

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// CardPath is where an A2A agent serves its agent card.
const CardPath = a2asrv.WellKnownAgentCardPath

// Interface is one of the A2A servers a2a-go builds: a protocol binding in a protocol version.
type Interface struct {
	Binding string // "JSONRPC" or "HTTP+JSON"
	Version string // "1.0" (a2asrv) or "0.3" (a2av0)
}

// The four servers a2a-go builds.
var (
	JSONRPC10 = Interface{Binding: "JSONRPC", Version: "1.0"}
	JSONRPC03 = Interface{Binding: "JSONRPC", Version: "0.3"}
	REST10    = Interface{Binding: "HTTP+JSON", Version: "1.0"}
	REST03    = Interface{Binding: "HTTP+JSON", Version: "0.3"}
)

// Handler is a2a-go's server of kind i for exec.
func (i Interface) Handler(exec a2asrv.AgentExecutor) http.Handler {
	h := a2asrv.NewHandler(exec)
	switch i {
	case JSONRPC10:
		return a2asrv.NewJSONRPCHandler(h)
	case JSONRPC03:
		return a2av0.NewJSONRPCHandler(h)
	case REST10:
		return a2asrv.NewRESTHandler(h)
	case REST03:
		return a2av0.NewRESTHandler(h)
	}
	panic(fmt.Sprintf("agenttest: a2a-go builds no %s %s server", i.Binding, i.Version))
}

// NewA2A starts an agent whose every request is served by a2a-go's server of kind i for exec,
// at the agent's URL and any path under it, and closes it when the test ends.
func NewA2A(t testing.TB, i Interface, exec a2asrv.AgentExecutor) *Agent {
	a := New(t, nil)
	a.Handle("/", i.Handler(exec))
	return a
}

// ServeCard serves card at CardPath as a2a-go serves an agent's card: for an agent with a 0.3
// interface (its version written "0.3", the only way a2av0 finds it) through a2av0's producer,
// with the 0.3 members beside the 1.0 ones; else the 1.0 card.
func (a *Agent) ServeCard(card *a2a.AgentCard) {
	h := a2asrv.NewStaticAgentCardHandler(card)
	for _, i := range card.SupportedInterfaces {
		if i.ProtocolVersion == a2av0.Version {
			h = a2asrv.NewAgentCardHandler(a2av0.NewStaticAgentCardProducer(card))
		}
	}
	a.Handle(CardPath, h)
}
