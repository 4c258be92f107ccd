// Package mcp is the MCP door: every request of the catalogue (web/catalog) that the MCP door
// serves is a tool named after it (cards.search is cards_search), taking the fields of the
// request's input and answering its output as structuredContent, with an output schema. Each
// tool calls the service through the Go client (web/client), so a tool call is the same request,
// behind the same authentication and service gates, as on REST: on the running server the client
// serves it in process with the caller's own token; from `agentcards mcp --server` it goes over
// the network. The seeds' tool names (mesh_register, registry_list, ...) answer as old names
// until the day the catalogue gives them.
package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/web/api"
	"github.com/agentcards/agentcards/web/catalog"
	"github.com/agentcards/agentcards/web/client"
)

// ClientFor returns the client a tool call is made with: the one that carries the caller's
// credentials.
type ClientFor func(ctx context.Context, req *sdk.CallToolRequest) (*client.Client, error)

// Options configure the tool set.
type Options struct {
	// Version is the server's version, announced at initialization.
	Version string
	// Now is the clock old names are checked against; time.Now by default.
	Now func() time.Time
	// Toolsets are the toolsets served (names of Toolsets, or All); none is DefaultToolsets.
	Toolsets []string
}

// NewServer returns an MCP server with a tool per request of the MCP door in the toolsets
// chosen, and the old names when they are.
func NewServer(clientFor ClientFor, o Options) (*sdk.Server, error) {
	sets, err := chosen(o.Toolsets)
	if err != nil {
		return nil, err
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Version == "" {
		o.Version = "(devel)"
	}
	s := sdk.NewServer(&sdk.Implementation{Name: "agentcards", Title: "agentcards registry", Version: o.Version},
		&sdk.ServerOptions{Instructions: instructions})
	for _, r := range catalog.Requests {
		if r.Doors&catalog.MCP == 0 {
			continue
		}
		set := Toolset(r)
		if set == "" {
			return nil, fmt.Errorf("mcp: the request %s is in no toolset", r.Name)
		}
		if !sets[set] {
			continue
		}
		t, err := Tool(r)
		if err != nil {
			return nil, err
		}
		s.AddTool(t, handler(r, clientFor))
	}
	for _, old := range catalog.OldNames {
		if old.Door != catalog.MCP || !sets[Old] {
			continue
		}
		t, h, err := oldTool(old, clientFor, o.Now)
		if err != nil {
			return nil, err
		}
		s.AddTool(t, h)
	}
	return s, nil
}

const instructions = `agentcards is a registry of agent capability cards. Find an agent with cards_search ` +
	`(by protocol, capability, tag, name or free text q), read its card with cards_get, and hand it a task ` +
	`with delegations_create. Every tool acts in the tenant of your token. A refused call is a tool error ` +
	`whose text is {"error": {"code", "message", "requestId"}}, with the REST API's codes: invalid (the ` +
	`message names each bad argument), unauthorized, forbidden (policy does not allow it), tenant_suspended, ` +
	`not_found, conflict, lockout (the change would leave no one to manage the tenant), precondition_failed ` +
	`(ifRevision is stale), rate_limited, agent_unavailable, ` +
	`agent_offline, card_disabled, depth_exceeded, unavailable and timeout (try again).`

// HTTPHandler serves the tools over streamable HTTP, statelessly (no session is kept between
// requests, so any replica answers any request). Each call is made with the bearer token of the
// HTTP request that carries it, through rest, the server's REST handler, in process.
func HTTPHandler(rest http.Handler, o Options) (http.Handler, error) {
	s, err := NewServer(func(ctx context.Context, req *sdk.CallToolRequest) (*client.Client, error) {
		var tok string
		if req.Extra != nil {
			scheme, raw, _ := strings.Cut(req.Extra.Header.Get("Authorization"), " ")
			if strings.EqualFold(scheme, "Bearer") {
				tok = strings.TrimSpace(raw)
			}
		}
		return client.New("http://in-process", client.WithHandler(rest), client.WithToken(tok),
			client.WithUserAgent("agentcards-mcp"))
	}, o)
	if err != nil {
		return nil, err
	}
	// The token, not the Host header, is what admits a caller: a page in a browser that rebinds a
	// name to this server has no token to send. So requests through a proxy that keeps its own
	// Host are served, which the SDK's localhost check would refuse.
	return sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s },
		&sdk.StreamableHTTPOptions{Stateless: true, JSONResponse: true, DisableLocalhostProtection: true}), nil
}

// Tool is the MCP tool of a request: its name, description, schemas and hints.
func Tool(r catalog.Request) (*sdk.Tool, error) {
	in, err := InputSchema(r.In)
	if err != nil {
		return nil, fmt.Errorf("mcp: %s: input schema: %w", r.Name, err)
	}
	out, err := OutputSchema(r)
	if err != nil {
		return nil, fmt.Errorf("mcp: %s: output schema: %w", r.Name, err)
	}
	return &sdk.Tool{
		Name: r.MCPTool(), Description: describe(r),
		InputSchema: nonNull(trimmed(in, inputDepth, inputDepth+1)), OutputSchema: trimmed(out, outputDepth, 0),
		Annotations: annotations(r),
	}, nil
}

// annotations are the hints of r's tool. destructiveHint is said only of a tool that changes
// something, the only kind it means anything for.
func annotations(r catalog.Request) *sdk.ToolAnnotations {
	a := &sdk.ToolAnnotations{ReadOnlyHint: r.ReadOnly(), IdempotentHint: r.Idempotent(), OpenWorldHint: &r.OpenWorld}
	if !r.ReadOnly() {
		destructive := r.Destructive()
		a.DestructiveHint = &destructive
	}
	return a
}

// The depths a tool's schemas are cut to (trimmed): an input's fields with their descriptions
// (which name the members of those that are objects); an output says it is an object, and the
// tool's description says what it holds.
const (
	inputDepth  = 1
	outputDepth = 0
)

// describe is a tool's description: what it does, what it answers, who may call it. How a call
// fails is the same for every tool, and said once, in the server's instructions.
func describe(r catalog.Request) string {
	var b strings.Builder
	b.WriteString(r.Does + ".")
	if d := details[r.Name]; d != "" {
		b.WriteString(" " + d)
	}
	b.WriteString(" Who may call it: " + r.Caller + ".")
	return b.String()
}

// details say, per tool, what the call does beyond its one line.
var details = map[string]string{
	"cards.search": "Find the agent for a task: a page {total, items, nextCursor} (pass it as cursor), ranked by " +
		"score with q; items compact (fields chooses). Every filter applies.",
	"cards.get": "Answers the whole card with its revision.",
	"cards.changes": "Without since: the present cursor; list with cards_search, then pass nextCursor as since to read " +
		"{changes: [{op upsert|remove, agentId, revision, card}], nextCursor, more}. A change may come twice: keep the highest revision.",
	"cards.register":       "Answers the card stored, with its revision; conflict if the agent has one already.",
	"cards.register_batch": "All or none: one bad card refuses the batch, naming it by index and field.",
	"cards.import":         "Converts an A2A Agent Card (1.0 or 0.3), given or fetched from url, and stores it; signatures are checked when it has any.",
	"cards.refresh": "Fetches the agent's A2A card again from the URL it was imported from and answers the outcome: updated (a new revision), " +
		"unchanged, or refused (a signature that does not verify where the last one did, or that a key rejects: the card stays as it was). " +
		"Every refresh is recorded in the card's source. conflict for a card not imported from a URL; fetch_failed when the URL does not answer.",
	"cards.replace": "Creates the card or replaces it whole; with ifRevision, stale if it changed meanwhile.",
	"cards.update":  "Only the members the patch sends change; null removes one. With ifRevision, stale if the card changed meanwhile.",
	"cards.remove":  "The card is gone for good; with ifRevision, only if it is at that revision.",
	"delegations.create": "Sends the task to the agent's endpoint (HTTP POST /task, or A2A, chosen from its card) once policy allows " +
		"delegate on the capability. mode sync (the default) waits for the agent, up to timeoutMs, and answers the record " +
		"with status completed (and result), failed (and error) or timeout. mode async answers at once with status accepted; " +
		"the agent reports later, and delegations_get reads the outcome.",
	"delegations.import": "Writes the records as they were, all or none, sending nothing to any agent: each keeps its id, times, status, " +
		"result, error and latency, is marked imported with the source, and has the caller agentcards:import/ and the source's caller. " +
		"A record still pending, running or accepted there is recorded as timeout. Answers the ids imported, and those the tenant held " +
		"already (existing, left as they were), so an import run again writes nothing twice; invalid naming the bad record by index.",
	"delegations.list": "Newest first; nextCursor pages on (pass it as cursor).",
	"delegations.get":  "Answers the record: status, result or error, latency.",
	"a2a.agents":       "Answers one page of agentId, name, description and the card's URL; nextCursor pages on.",
	"a2a.card":         "Answers the A2A Agent Card document as A2A clients read it, signed by the service, and by its publisher where it is the publisher's content.",
	"a2a.catalog": "Answers the AI Catalog document (ai-catalog.io) of up to limit public cards: entries {identifier, type, url of the A2A card, " +
		"description, tags, updatedAt, version}, signed. When more remain, the last entry is an application/ai-catalog+json " +
		"whose url holds the next page's cursor.",
	"access.check": "Answers allowed and the policy that decided; changes nothing.",
	"audit.list": "Newest first: who (principal), what (action, the request's name), on which object, the revisions before and after, " +
		"and the outcome (ok, denied, or a delegation's status). Filters combine; nextCursor pages on (pass it as cursor).",
	"synonyms.list": "Answers the tenant's synonym sets in id order, each with its id, words and updatedAt: a query word or phrase in a set " +
		"also finds the cards that say another of its words.",
	"synonyms.put": "Creates the set or replaces the set of that id whole; searches use it from their next query. invalid naming the bad word; " +
		"conflict when the tenant already has 500 sets.",
	"synonyms.remove": "The set is gone for good; not_found when the tenant has no set of that id.",
	"trust.list": "Answers the issuers of the tenant's trust policy in domain order, each with its domain and its keys (jwksUrl, or a pinned JWKS): " +
		"a card is trusted when a signature verifies with a key of the issuer whose domain covers the hosts of its interfaces.",
	"trust.put": "Creates the domain's issuer or replaces it, then weighs again every imported card it covers, and answers the entry and " +
		"how many cards were weighed, trusted and changed. A jwksUrl is fetched first: blocked_url or fetch_failed when it cannot be.",
	"trust.remove": "The issuer is gone; the cards it vouched for are no longer trusted (answers how many changed). not_found when there is none.",
	"sources.create": "The tenant mirrors the source's cards, read-only, each marked with mirror.source: an agentcards tenant (url .../v1/tenants/{id}, " +
		"token) followed live through its signed change feed; an ai-catalog (url) or a2a-urls (urls) read every intervalSeconds. " +
		"A card the tenant has of its own is never overwritten (listed in conflicts). conflict for a source already followed.",
	"sources.list": "Each source with its state (syncing, active, failing, removing), cards, conflicts, failures, lastError, lastSyncAt and nextSyncAt.",
	"sources.update": "A new token (agentcards; \"\" for none) is sent from the next sync on, and a failing source is tried again at once; " +
		"a new intervalSeconds (10 to 86400) applies from the next read. conflict while the source is removing.",
	"sources.remove": "The source stops syncing at once and is answered removing; its mirrored cards are removed, then the source.",
	"webhooks.create": "Each change of a matching card is POSTed to url as a CloudEvent (type agentcards.card.upserted or .removed), signed: " +
		"the Agentcards-Signature header is a detached JWS the keys of keys_list verify. Delivery is at least once, in order; blocked_url for a refused address.",
	"webhooks.list":       "Each subscription with its state (active, failing, disabled), failures, lastError and nextAttemptAt.",
	"webhooks.update":     "state active resumes a failing or disabled subscription at once, from where it stopped; disabled pauses it.",
	"webhooks.remove":     "The subscription and its delivery records are gone for good; a delivery in flight may still arrive.",
	"webhooks.deliveries": "Newest first: each attempt's eventId, type, agentId, status, ok, error, latencyMs and at.",
	"tenants.update":      "A suspended tenant keeps its data; every request in it is refused until it is active again.",
	"tenants.delete":      "Deletes the tenant's cards, roles, policies and delegations for good.",
}

// handler answers a tool call of request r.
func handler(r catalog.Request, clientFor ClientFor) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		in := reflect.New(r.In)
		if err := decodeArgs(req.Params.Arguments, in.Interface()); err != nil {
			return toolError(err), nil
		}
		c, err := clientFor(ctx, req)
		if err != nil {
			return nil, err
		}
		var view []string
		if s, ok := in.Interface().(*api.CardsSearch); ok {
			if view, err = api.SearchView(s.Fields); err != nil {
				return toolError(&client.Error{Status: http.StatusBadRequest, Code: "invalid", Message: err.Error() + ": invalid request"}), nil
			}
		}
		out := reflect.New(r.Out)
		ctx, stale := client.WatchStale(ctx)
		if err := c.Call(ctx, r.Name, in.Interface(), out.Interface()); err != nil {
			return toolError(err), nil
		}
		var answer any = out.Interface()
		if r.Name == "cards.search" {
			answer = api.Compact(*out.Interface().(*api.SearchResult), view)
		}
		res, err := result(answer, "")
		if note := stale(); note != "" && err == nil {
			// As REST's X-Agentcards-Stale: a text first, for clients that read only text, and
			// the note under _meta.
			res.Content = append([]sdk.Content{&sdk.TextContent{Text: staleNotice + note}}, res.Content...)
			res.Meta = sdk.Meta{StaleMeta: note}
		}
		return res, err
	}
}

// StaleMeta is the _meta key of a tool's answer made of what the service held in memory while its
// database did not answer (REST's X-Agentcards-Stale); its value is the service's note.
const StaleMeta = "agentcards/stale"

// staleNotice opens the text that says so.
const staleNotice = "Answered from memory, it may miss recent writes: "

// decodeArgs reads a tool's arguments strictly, as REST reads a body: an argument whose name is
// not exactly one of the tool's, or of the wrong type, is invalid, every unknown one named.
func decodeArgs(args json.RawMessage, v any) error {
	if len(args) == 0 || string(args) == "null" {
		return nil
	}
	if err := cards.DecodeStrict(args, v); err != nil {
		return &client.Error{Status: http.StatusBadRequest, Code: "invalid", Message: "arguments: " + fault.MessageOf(err)}
	}
	return nil
}

// result is a tool's answer: the output as structuredContent and as JSON text (for clients that
// read only text), after the notice of an old name, if any.
func result(out any, notice string) (*sdk.CallToolResult, error) {
	raw, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	var structured any = json.RawMessage(raw)
	if string(raw) == "null" {
		structured = map[string]any{}
	}
	var content []sdk.Content
	if notice != "" {
		content = append(content, &sdk.TextContent{Text: notice})
	}
	content = append(content, &sdk.TextContent{Text: string(raw)})
	return &sdk.CallToolResult{StructuredContent: structured, Content: content}, nil
}

// toolError is a refused call: a tool error whose text is the REST error body.
func toolError(err error) *sdk.CallToolResult {
	var body struct {
		Error struct {
			Code      string `json:"code"`
			Message   string `json:"message"`
			RequestID string `json:"requestId,omitempty"`
		} `json:"error"`
	}
	var ce *client.Error
	if errors.As(err, &ce) {
		body.Error.Code, body.Error.Message, body.Error.RequestID = ce.Code, ce.Message, ce.RequestID
	} else {
		body.Error.Code, body.Error.Message = "unavailable", err.Error()
	}
	raw, _ := json.Marshal(body)
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: string(raw)}}}
}

// ---- schemas

// schemaOptions give the types whose schema reflection cannot tell: any JSON, and times.
var schemaOptions = &jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[json.RawMessage](): {},
	reflect.TypeFor[time.Time]():       {Type: "string", Format: "date-time"},
}}

// InputSchema is the schema of a tool's arguments: the input's fields under their JSON names
// (the fields REST carries in the path, the query, a header and the body alike), described by
// their doc tags; the ones without omitempty are required (a scope's tenant has it: it defaults
// to the token's).
func InputSchema(t reflect.Type) (*jsonschema.Schema, error) {
	s := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{}}
	for _, f := range client.Fields(t) {
		fs, err := jsonschema.ForType(f.Type, schemaOptions)
		if err != nil {
			return nil, err
		}
		fs.Description = f.Doc
		target := fs // the enum of a list is its items'
		if fs.Items != nil {
			target = fs.Items
		}
		for _, v := range f.Enum {
			target.Enum = append(target.Enum, v)
		}
		if f.Min != nil {
			fs.Minimum = new(float64(*f.Min))
		}
		if f.Max != nil {
			fs.Maximum = new(float64(*f.Max))
		}
		if f.In == "body" && f.Type == reflect.TypeFor[json.RawMessage]() {
			fs.Type = "object"
		}
		s.Properties[f.Name] = fs
		s.PropertyOrder = append(s.PropertyOrder, f.Name)
		if !f.OmitEmpty {
			s.Required = append(s.Required, f.Name)
		}
	}
	s.AdditionalProperties = &jsonschema.Schema{Not: &jsonschema.Schema{}}
	return s, nil
}

// OutputSchema is the schema of a tool's structuredContent.
func OutputSchema(r catalog.Request) (*jsonschema.Schema, error) {
	switch r.Name {
	case "cards.search":
		return compactSchema()
	case "a2a.card":
		return &jsonschema.Schema{Type: "object", Description: "an A2A Agent Card"}, nil
	}
	s, err := jsonschema.ForType(r.Out, schemaOptions)
	if err != nil {
		return nil, err
	}
	if s.Type == "" {
		s.Type = "object"
	}
	return s, nil
}
