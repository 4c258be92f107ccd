package api

import (
	"encoding/json"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/agentcards/agentcards/cards"
)

// ---- agentkit-mesh's HTTP control plane
//
// The inputs and answers of agentkit-mesh's /v1 routes, served under one base URL per tenant
// (/compat/agentkit-mesh/{tenant}) so that that registry's clients change only their base URL and
// token. An agentkit-mesh agent's name is its id: here, the card's agentId.

// MeshAgentsList lists every agent of the tenant.
type MeshAgentsList struct {
	Scope
}

// MeshAgentRef names one agent.
type MeshAgentRef struct {
	Scope
	Name string `json:"name" in:"path" doc:"the agent's name: its card's agentId"`
}

// MeshAgentsRegister registers an agent, or replaces the one of that name (agentkit-mesh's
// upsert).
type MeshAgentsRegister struct {
	Scope
	Name         string         `json:"name" doc:"the agent's unique name: its card's agentId (and name)"`
	Description  string         `json:"description,omitempty" doc:"what the agent does"`
	Capabilities []string       `json:"capabilities,omitempty" doc:"its capabilities, by name"`
	Resources    []MeshResource `json:"resources,omitempty" doc:"URIs (patterns) it has access to"`
	Endpoint     string         `json:"endpoint" doc:"its HTTP callback URL: receives POST /task"`
	Protocol     string         `json:"protocol,omitempty" doc:"the protocol it speaks; http by default"`
	Auth         *MeshAuth      `json:"auth,omitempty" doc:"the credential sent with each task: sealed, never read back"`
}

// MeshAuth is the credential agentkit-mesh sends an agent: a bearer token, or a secret in a
// named header.
type MeshAuth struct {
	Type       string `json:"type" doc:"bearer, header or none" enum:"bearer,header,none"`
	Token      string `json:"token,omitempty" doc:"the secret"`
	HeaderName string `json:"headerName,omitempty" doc:"with header: the header it goes in"`
}

// MeshResource is a resource an agent has access to.
type MeshResource struct {
	Type        string `json:"type,omitempty" doc:"taken and not kept (older agentkit-mesh clients send it)"`
	URI         string `json:"uri"`
	Description string `json:"description,omitempty" doc:"taken and not kept: a card's resources have none"`
	Access      string `json:"access,omitempty" doc:"read, write or admin"`
}

// MeshAuthType says how an agent's calls are authenticated, without the secret.
type MeshAuthType struct {
	Type string `json:"type" doc:"bearer or header" enum:"bearer,header"`
}

// MeshAgent is agentkit-mesh's agent record, its members in that registry's order.
type MeshAgent struct {
	Name         string         `json:"name" doc:"the agent's name (its agentId)"`
	Description  string         `json:"description"`
	Capabilities []string       `json:"capabilities"`
	Resources    []MeshResource `json:"resources"`
	Endpoint     string         `json:"endpoint"`
	Protocol     string         `json:"protocol"`
	Auth         *MeshAuthType  `json:"auth,omitempty" doc:"present when the agent's calls carry a credential: its type only"`
	RegisteredAt string         `json:"registered_at" doc:"when the card was created (ISO 8601, milliseconds, UTC)"`
	LastSeen     string         `json:"last_seen" doc:"its last heartbeat or write, whichever is later"`
}

// MeshOK is agentkit-mesh's answer to a removal or a heartbeat.
type MeshOK struct {
	OK bool `json:"ok"`
}

// MeshDiscover finds the agents that match a query, ranked.
type MeshDiscover struct {
	Scope
	Query     string `json:"query" in:"query" doc:"what the agent must do, in words"`
	Limit     string `json:"limit,omitempty" in:"query" doc:"at most this many, read as JavaScript's parseInt reads it; 0, none or no number: every match, up to 1,000"`
	Resources string `json:"resources,omitempty" in:"query" doc:"a JSON list of {\"uri\"}: the agent must have access to each"`
}

// MeshMatch is one agent found, with why.
type MeshMatch struct {
	Agent               MeshAgent      `json:"agent"`
	Score               float64        `json:"score" doc:"its relevance to the query: higher is better"`
	MatchedCapabilities []string       `json:"matchedCapabilities" doc:"its capabilities the query matched"`
	MatchedResources    []MeshResource `json:"matchedResources" doc:"its resources that cover the required ones"`
}

// MeshURI names a resource an agent must have access to.
type MeshURI struct {
	Type string `json:"type,omitempty" doc:"taken and not used"`
	URI  string `json:"uri"`
}

// MeshDelegate sends a task to an agent, named or the best match of a query.
type MeshDelegate struct {
	Scope
	Task        string          `json:"task" doc:"what to do"`
	TargetName  string          `json:"targetName,omitempty" doc:"the agent to send it to"`
	Query       string          `json:"query,omitempty" doc:"without targetName: send it to the best match of this query"`
	Resources   []MeshURI       `json:"resources,omitempty" doc:"resources the agent must have access to"`
	Context     json.RawMessage `json:"context,omitempty" doc:"any JSON the agent gets with the task"`
	SourceAgent string          `json:"sourceAgent,omitempty" doc:"taken and not kept: the record's caller is the token's subject"`
	Async       bool            `json:"async,omitempty" doc:"true: answer once the agent accepted the task; it posts its result later"`
}

// MeshDelegated is agentkit-mesh's answer to a delegation: its id, target and outcome.
type MeshDelegated struct {
	ID          string          `json:"id"`
	TargetAgent string          `json:"targetAgent"`
	Success     bool            `json:"success" doc:"true when completed or accepted"`
	Status      string          `json:"status" doc:"completed, accepted, failed or timeout"`
	Result      json.RawMessage `json:"result,omitempty"`
	Error       string          `json:"error,omitempty"`
	LatencyMS   int64           `json:"latencyMs"`
}

// MeshDelegationsList lists delegation records, newest first.
type MeshDelegationsList struct {
	Scope
	Limit  string `json:"limit,omitempty" in:"query" doc:"at most this many, read as JavaScript's parseInt reads it: 50 by default, up to 1,000"`
	Offset string `json:"offset,omitempty" in:"query" doc:"skip this many first (up to 10,000)"`
}

// MeshDelegationRef names one delegation.
type MeshDelegationRef struct {
	Scope
	ID string `json:"id" in:"path" doc:"the delegation's id"`
}

// MeshDelegation is agentkit-mesh's delegation record.
type MeshDelegation struct {
	ID          string           `json:"id"`
	SourceAgent string           `json:"source_agent" doc:"who delegated: the caller's subject (a record imported from agentkit-mesh: its source_agent)"`
	TargetAgent string           `json:"target_agent"`
	Task        *string          `json:"task" doc:"the task as recorded; null when the tenant keeps no task text"`
	Status      string           `json:"status" doc:"pending, running, accepted, completed, failed, timeout or rejected"`
	Result      *json.RawMessage `json:"result" doc:"the agent's result; null until it has one"`
	Error       *string          `json:"error"`
	LatencyMS   *int64           `json:"latency_ms"`
	CreatedAt   string           `json:"created_at" doc:"ISO 8601, milliseconds, UTC"`
	UpdatedAt   string           `json:"updated_at" doc:"ISO 8601, milliseconds, UTC"`
}

// MeshResult is the result an agent posts for an async delegation.
type MeshResult struct {
	Scope
	ID     string          `json:"id" in:"path" doc:"the delegation's id"`
	Status string          `json:"status" doc:"completed or failed" enum:"completed,failed"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// MeshAgentOf is a card as agentkit-mesh's agent record; kind is how its calls carry their
// credential ("" for none).
func MeshAgentOf(c cards.Card, kind string) MeshAgent {
	a := MeshAgent{Name: c.AgentID, Description: c.Description, Capabilities: make([]string, 0, len(c.Capabilities)),
		Resources: make([]MeshResource, 0, len(c.Resources)), Endpoint: c.Endpoint, Protocol: "http",
		RegisteredAt: MeshTime(c.CreatedAt), LastSeen: MeshTime(c.UpdatedAt)}
	for _, cp := range c.Capabilities {
		a.Capabilities = append(a.Capabilities, cp.Name)
	}
	for _, r := range c.Resources {
		a.Resources = append(a.Resources, MeshResource{URI: r.URI, Access: r.Access})
	}
	if len(c.Protocols) > 0 {
		a.Protocol = c.Protocols[0]
	}
	if l := c.Liveness; l != nil && l.LastSeenAt != nil && l.LastSeenAt.After(c.UpdatedAt) {
		a.LastSeen = MeshTime(*l.LastSeenAt)
	}
	if kind != "" {
		a.Auth = &MeshAuthType{Type: kind}
	}
	return a
}

// MeshCapability picks the capability of a delegation that names none, as agentkit-mesh's are:
// the card's only one, or the one whose name and title share the most words with the task (the
// first listed on a tie). It reports false for a card that declares none.
func MeshCapability(card cards.Card, task string) (string, bool) {
	if len(card.Capabilities) == 0 {
		return "", false
	}
	taskWords := words(task)
	best, bestScore := card.Capabilities[0].Name, -1
	for _, c := range card.Capabilities {
		score := 0
		for _, w := range words(c.Name + " " + c.Title) {
			if slices.Contains(taskWords, w) {
				score++
			}
		}
		if score > bestScore {
			best, bestScore = c.Name, score
		}
	}
	return best, true
}

// words splits text into lowercase words at anything not a letter or digit (budget_approval is
// two words).
func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// MeshTime writes t as JavaScript's toISOString does, as agentkit-mesh's records have it: UTC,
// to the millisecond.
func MeshTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }
