package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/web/api"
	"github.com/agentcards/agentcards/web/catalog"
	"github.com/agentcards/agentcards/web/client"
)

// The old names' inputs and answers, in the shapes their registries documented. An agentkit-mesh
// agent's name is its id: here, the card's agentId. Each answer's first text is what the seed's
// tool put there (its JSON as JSON.stringify(answer, null, 2) writes it, or its sentence); the
// notice of the new name follows, and the structured answer is the seed's with the notice beside
// it.
type (
	meshRegisterIn struct {
		Name         string   `json:"name" doc:"unique agent name: the card's agentId (and its name)"`
		Description  string   `json:"description" doc:"what this agent does"`
		Capabilities []string `json:"capabilities" doc:"list of capabilities"`
		Endpoint     string   `json:"endpoint" doc:"the agent's HTTP callback URL: receives POST /task"`
	}
	// meshAgent is agentkit-mesh's agent record, its members in its order. auth is always null:
	// an endpoint secret is never read back.
	meshAgent struct {
		Name         string             `json:"name" doc:"the agent's name (its agentId)"`
		Description  string             `json:"description"`
		Capabilities []string           `json:"capabilities"`
		Resources    []api.MeshResource `json:"resources"`
		Endpoint     string             `json:"endpoint"`
		Protocol     string             `json:"protocol"`
		Auth         *struct{}          `json:"auth" doc:"always null: credentials are never read back"`
		RegisteredAt string             `json:"registered_at" doc:"when the card was created (ISO 8601, milliseconds, UTC)"`
		LastSeen     string             `json:"last_seen" doc:"its last heartbeat or write, whichever is later"`
	}
	meshRegisterOut struct {
		meshAgent
		Notice string `json:"notice"`
	}
	meshDiscoverIn struct {
		Query string `json:"query" doc:"search query (e.g. \"budget management\")"`
		Limit int    `json:"limit,omitempty" doc:"max results to return (1 to 100, 20 by default)"`
	}
	meshMatch struct {
		Agent               meshAgent          `json:"agent"`
		Score               float64            `json:"score"`
		MatchedCapabilities []string           `json:"matchedCapabilities"`
		MatchedResources    []api.MeshResource `json:"matchedResources"`
	}
	meshDiscoverOut struct {
		Results []meshMatch `json:"results" doc:"agents ranked by score, with the matched capabilities"`
		Notice  string      `json:"notice"`
	}
	meshUnregisterIn struct {
		Name string `json:"name" doc:"agent name to remove"`
	}
	meshUnregisterOut struct {
		Removed bool   `json:"removed"`
		Name    string `json:"name"`
		Notice  string `json:"notice"`
	}
	meshDelegateIn struct {
		TargetName string `json:"targetName" doc:"name of the target agent"`
		Task       string `json:"task" doc:"task description to delegate"`
		Context    string `json:"context,omitempty" doc:"optional JSON context"`
	}
	// meshDelegation is agentkit-mesh's answer to a delegation: its id and outcome.
	meshDelegation struct {
		ID        string          `json:"id"`
		Success   bool            `json:"success"`
		Status    string          `json:"status"`
		Result    json.RawMessage `json:"result,omitempty"`
		Error     string          `json:"error,omitempty"`
		LatencyMS int64           `json:"latencyMs"`
	}
	meshDelegateOut struct {
		meshDelegation
		Notice string `json:"notice"`
	}
	registryListIn struct {
		Capability string   `json:"capability,omitempty" doc:"a capability the agent must declare, like weather"`
		Offering   string   `json:"offering,omitempty" doc:"an offering id the agent must have: a capability name here"`
		Tags       []string `json:"tags,omitempty" doc:"tags the agent must have"`
	}
	registryAgent struct {
		AgentID     string   `json:"agent_id"`
		Name        string   `json:"name,omitempty"`
		Description string   `json:"description,omitempty"`
		Offerings   []string `json:"offerings,omitempty"`
	}
	registryList struct {
		Total  int             `json:"total"`
		Agents []registryAgent `json:"agents"`
	}
	registryListOut struct {
		registryList
		Notice string `json:"notice"`
	}
)

// registryListMax bounds what registry_list reads: it lists every match, page after page.
const registryListMax = 1000

// oldCall answers one old name's call with its client: the structured answer, with the notice
// in it, and the text the seed's tool answered.
type oldCall func(ctx context.Context, c *client.Client, args json.RawMessage, notice string) (answer any, text string, err error)

// oldTools are the old names: what each describes, takes, answers, and does.
var oldTools = map[string]struct {
	does    string
	in, out reflect.Type
	call    oldCall
}{
	"mesh_register": {"Register an agent with its capabilities and HTTP callback endpoint (agentkit-mesh).",
		reflect.TypeFor[meshRegisterIn](), reflect.TypeFor[meshRegisterOut](), meshRegister},
	"mesh_discover": {"Discover agents matching a query by capability (agentkit-mesh): ranked by the free-text search.",
		reflect.TypeFor[meshDiscoverIn](), reflect.TypeFor[meshDiscoverOut](), meshDiscover},
	"mesh_unregister": {"Remove an agent from the registry (agentkit-mesh).",
		reflect.TypeFor[meshUnregisterIn](), reflect.TypeFor[meshUnregisterOut](), meshUnregister},
	"mesh_delegate": {"Delegate a task to an agent by name (agentkit-mesh), synchronously: sends it to the agent's endpoint and " +
		"answers the delegation record with its result. agentkit-mesh names no capability: the agent's only capability is " +
		"used, or, when it has several, the one whose name shares the most words with the task (the first listed on a tie); " +
		"the record says which, and policy must allow delegate on it.",
		reflect.TypeFor[meshDelegateIn](), reflect.TypeFor[meshDelegateOut](), meshDelegate},
	"registry_list": {"List the agents that can be reached (agentmesh): every one not known to be offline (online, or unknown), " +
		"filtered by a capability, an offering (a capability name) and tags (all of them); every match, up to 1,000.",
		reflect.TypeFor[registryListIn](), reflect.TypeFor[registryListOut](), listRegistry},
}

// oldTool is the tool of an old name: until its day, the mapped request with the notice; from
// then on a refusal naming the new name. It stays listed after its day, so that a caller learns
// the new name instead of an unknown tool.
func oldTool(old catalog.OldName, clientFor ClientFor, now func() time.Time) (*sdk.Tool, sdk.ToolHandler, error) {
	def, ok := oldTools[old.Name]
	if !ok {
		return nil, nil, fmt.Errorf("mcp: no tool for the old name %s", old.Name)
	}
	in, err := InputSchema(def.in)
	if err != nil {
		return nil, nil, err
	}
	out, err := jsonschema.ForType(def.out, schemaOptions)
	if err != nil {
		return nil, nil, err
	}
	r, _ := catalog.Lookup(old.Request)
	t := &sdk.Tool{
		Name: old.Name, Description: "Old name: " + old.Notice() + " " + def.does,
		InputSchema: nonNull(trimmed(in, inputDepth, inputDepth+1)), OutputSchema: trimmed(out, outputDepth, 0),
		Annotations: annotations(r),
	}
	h := func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		if !old.Answers(now()) {
			return toolError(&client.Error{Status: http.StatusGone, Code: "renamed", Message: old.Refusal()}), nil
		}
		c, err := clientFor(ctx, req)
		if err != nil {
			return nil, err
		}
		answer, text, err := def.call(ctx, c, req.Params.Arguments, old.Notice())
		if err != nil {
			res := toolError(err)
			res.Content = append(res.Content, &sdk.TextContent{Text: old.Notice()})
			return res, nil
		}
		raw, err := json.Marshal(answer)
		if err != nil {
			return nil, err
		}
		return &sdk.CallToolResult{StructuredContent: json.RawMessage(raw),
			Content: []sdk.Content{&sdk.TextContent{Text: text}, &sdk.TextContent{Text: old.Notice()}}}, nil
	}
	return t, h, nil
}

func capabilityNames(cs []cards.Capability) []string {
	names := make([]string, 0, len(cs))
	for _, c := range cs {
		names = append(names, c.Name)
	}
	return names
}

// meshAgentOf is a card as agentkit-mesh's agent record, as its control plane gives it
// (api.MeshAgentOf), with auth null.
func meshAgentOf(c cards.Card) meshAgent {
	a := api.MeshAgentOf(c, "")
	return meshAgent{Name: a.Name, Description: a.Description, Capabilities: a.Capabilities, Resources: a.Resources,
		Endpoint: a.Endpoint, Protocol: a.Protocol, RegisteredAt: a.RegisteredAt, LastSeen: a.LastSeen}
}

// jsText writes v as JSON.stringify(v, null, 2) does: indented by two spaces, nothing escaped
// that JSON does not require.
func jsText(v any) (string, error) {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

func meshRegister(ctx context.Context, c *client.Client, args json.RawMessage, notice string) (any, string, error) {
	var in meshRegisterIn
	if err := decodeArgs(args, &in); err != nil {
		return nil, "", err
	}
	card := api.CardsRegister{CardInput: api.CardInput{AgentID: in.Name, Name: in.Name, Description: in.Description,
		Protocols: []string{"http"}, Endpoint: in.Endpoint}}
	for _, name := range in.Capabilities {
		card.Capabilities = append(card.Capabilities, cards.Capability{Name: name})
	}
	got, err := c.Cards.Register(ctx, card)
	if err != nil {
		return nil, "", err
	}
	agent := meshAgentOf(got)
	text, err := jsText(agent)
	return meshRegisterOut{meshAgent: agent, Notice: notice}, text, err
}

func meshDiscover(ctx context.Context, c *client.Client, args json.RawMessage, notice string) (any, string, error) {
	var in meshDiscoverIn
	if err := decodeArgs(args, &in); err != nil {
		return nil, "", err
	}
	page, err := c.Cards.Search(ctx, api.CardsSearch{Q: in.Query, Limit: in.Limit})
	if err != nil {
		return nil, "", err
	}
	out := meshDiscoverOut{Results: []meshMatch{}, Notice: notice}
	for _, h := range page.Items {
		m := meshMatch{Agent: meshAgentOf(h.Card), MatchedCapabilities: h.MatchedCapabilities, MatchedResources: []api.MeshResource{}}
		if m.MatchedCapabilities == nil {
			m.MatchedCapabilities = []string{}
		}
		if h.Score != nil {
			m.Score = *h.Score
		}
		out.Results = append(out.Results, m)
	}
	text, err := jsText(out.Results)
	return out, text, err
}

func meshUnregister(ctx context.Context, c *client.Client, args json.RawMessage, notice string) (any, string, error) {
	var in meshUnregisterIn
	if err := decodeArgs(args, &in); err != nil {
		return nil, "", err
	}
	_, err := c.Cards.Remove(ctx, api.CardsRemove{AgentID: in.Name})
	var ce *client.Error
	switch {
	case errors.As(err, &ce) && ce.Status == http.StatusNotFound && ce.Code == "not_found":
		// As agentkit-mesh answers an agent it does not have: a sentence, not an error.
		return meshUnregisterOut{Name: in.Name, Notice: notice}, "Agent " + in.Name + " not found", nil
	case err != nil:
		return nil, "", err
	}
	return meshUnregisterOut{Removed: true, Name: in.Name, Notice: notice}, "Unregistered " + in.Name, nil
}

func meshDelegate(ctx context.Context, c *client.Client, args json.RawMessage, notice string) (any, string, error) {
	var in meshDelegateIn
	if err := decodeArgs(args, &in); err != nil {
		return nil, "", err
	}
	card, err := c.Cards.Get(ctx, api.CardRef{AgentID: in.TargetName})
	if err != nil {
		return nil, "", err
	}
	capability, ok := api.MeshCapability(card, in.Task)
	if !ok {
		return nil, "", &client.Error{Status: http.StatusBadRequest, Code: "invalid",
			Message: fmt.Sprintf("agent %s declares no capability to delegate to: invalid request", card.AgentID)}
	}
	req := api.DelegationsCreate{AgentID: in.TargetName, Capability: capability, Task: in.Task, Mode: "sync"}
	if in.Context != "" {
		// agentkit-mesh's context is JSON text; anything else is passed on as a string.
		if json.Valid([]byte(in.Context)) {
			req.Context = json.RawMessage(in.Context)
		} else {
			req.Context, _ = json.Marshal(in.Context)
		}
	}
	d, err := c.Delegations.Create(ctx, req)
	if err != nil {
		return nil, "", err
	}
	md := meshDelegation{ID: d.ID, Success: d.Status == "completed" || d.Status == "accepted", Status: d.Status,
		Result: d.Result, Error: d.Error, LatencyMS: d.LatencyMS}
	text, err := jsText(md)
	return meshDelegateOut{meshDelegation: md, Notice: notice}, text, err
}

func listRegistry(ctx context.Context, c *client.Client, args json.RawMessage, notice string) (any, string, error) {
	var in registryListIn
	if err := decodeArgs(args, &in); err != nil {
		return nil, "", err
	}
	// The seed's filters all apply, each with all its values, as the search's do; and the seed
	// lists the agents that can be reached: every one not known to be offline (online, or never
	// heard of by a tenant that uses neither heartbeats nor probes).
	q := api.CardsSearch{Limit: 100, Tag: in.Tags}
	for _, c := range []string{in.Capability, in.Offering} {
		if c != "" && !slices.Contains(q.Capability, c) {
			q.Capability = append(q.Capability, c)
		}
	}
	out := registryListOut{registryList: registryList{Agents: []registryAgent{}}, Notice: notice}
	for h, err := range c.Cards.SearchAll(ctx, q) {
		if err != nil {
			return nil, "", err
		}
		if h.Card.Liveness != nil && h.Card.Liveness.State == cards.Offline {
			continue
		}
		names := capabilityNames(h.Card.Capabilities)
		out.Total++
		if len(out.Agents) < registryListMax {
			out.Agents = append(out.Agents, registryAgent{AgentID: h.Card.AgentID, Name: h.Card.Name,
				Description: h.Card.Description, Offerings: names})
		}
	}
	text, err := jsText(out.registryList)
	return out, text, err
}
