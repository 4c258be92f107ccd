package mcp

import (
	"fmt"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentcards/agentcards/web/catalog"
)

// An agent pays for every tool it is shown, so a server shows the tools its callers use: the
// tools are grouped into toolsets by what a caller does, and each server serves the toolsets its
// operator chose (mcp.toolsets; agentcards mcp --toolsets).

// The toolsets.
const (
	// Discovery finds cards and reads them: what an orchestrator looks agents up with.
	Discovery = "discovery"
	// Delegation hands tasks to agents and reads the outcomes.
	Delegation = "delegation"
	// A2A reads the A2A views: public agents, A2A cards, the service's keys.
	A2A = "a2a"
	// Cards writes cards: registration, changes, imports, refreshes, heartbeats, endpoint secrets.
	Cards = "cards"
	// Admin administers the tenant: tenants, roles, policies, the audit trail, synonyms, trust, sources, webhooks,
	// imports of delegation history.
	Admin = "admin"
	// Old are the seeds' tool names (agentkit-mesh, agentmesh), answered until their day.
	Old = "old"
	// All is every toolset.
	All = "all"
)

// Toolsets lists the toolsets, in the order tools are listed.
var Toolsets = []string{Discovery, Delegation, A2A, Cards, Admin, Old}

// DefaultToolsets serve an orchestrator: it finds agents, reads their cards and delegates to
// them; and the seeds' names, so that their clients need no configuration.
var DefaultToolsets = []string{Discovery, Delegation, Old}

// toolsetOf is the toolset of each request of the MCP door; a test checks that every one has one.
var toolsetOf = map[string]string{
	"cards.search": Discovery, "cards.get": Discovery, "cards.changes": Discovery,
	"delegations.create": Delegation, "delegations.get": Delegation, "delegations.list": Delegation,
	"a2a.agents": A2A, "a2a.card": A2A, "a2a.catalog": A2A, "keys.list": A2A,
	"cards.register": Cards, "cards.register_batch": Cards, "cards.import": Cards, "cards.refresh": Cards,
	"cards.heartbeat": Cards, "cards.replace": Cards, "cards.update": Cards, "cards.remove": Cards,
	"secrets.set": Cards, "secrets.remove": Cards,
	"tenants.create": Admin, "tenants.list": Admin, "tenants.get": Admin, "tenants.update": Admin, "tenants.delete": Admin,
	"roles.list": Admin, "roles.grant": Admin, "roles.revoke": Admin,
	"policies.list": Admin, "policies.add": Admin, "policies.remove": Admin, "access.check": Admin,
	"audit.list": Admin, "synonyms.list": Admin, "synonyms.put": Admin, "synonyms.remove": Admin,
	"delegations.import": Admin,
	"webhooks.create":    Admin, "webhooks.list": Admin, "webhooks.get": Admin, "webhooks.update": Admin,
	"webhooks.remove": Admin, "webhooks.deliveries": Admin,
	"trust.list": Admin, "trust.get": Admin, "trust.put": Admin, "trust.remove": Admin,
	"sources.create": Admin, "sources.list": Admin, "sources.get": Admin, "sources.update": Admin, "sources.remove": Admin,
}

// Toolset is the toolset a request's tool is in ("" for a request the MCP door does not serve).
func Toolset(r catalog.Request) string { return toolsetOf[r.Name] }

// chosen reads a list of toolsets: names of Toolsets, or All; none is DefaultToolsets.
func chosen(names []string) (map[string]bool, error) {
	if len(names) == 0 {
		names = DefaultToolsets
	}
	set := map[string]bool{}
	for _, n := range names {
		n = strings.TrimSpace(strings.ToLower(n))
		switch {
		case n == All:
			for _, t := range Toolsets {
				set[t] = true
			}
		case slices.Contains(Toolsets, n):
			set[n] = true
		default:
			return nil, fmt.Errorf("mcp: toolset %q: want %s or %s", n, strings.Join(Toolsets, ", "), All)
		}
	}
	return set, nil
}

// CheckToolsets refuses a list of toolsets the server could not serve.
func CheckToolsets(names []string) error {
	_, err := chosen(names)
	return err
}

// trimmed is s cut for a tool list, where every byte is paid for: below depth levels of
// properties an object says only that it is one and an array only its items' type; descriptions
// are kept down to describe levels. A schema so cut admits all that s admits: it only drops
// constraints (additionalProperties goes with the properties it closes), so an answer valid for
// s is valid for it, and a call s takes it takes.
func trimmed(s *jsonschema.Schema, depth, describe int) *jsonschema.Schema {
	if s == nil {
		return nil
	}
	t := &jsonschema.Schema{Type: s.Type, Types: s.Types, Enum: s.Enum, Const: s.Const, Minimum: s.Minimum, Maximum: s.Maximum}
	if describe > 0 {
		t.Description, t.Format = s.Description, s.Format
	}
	if s.Items != nil {
		// A list's items are at its own level.
		t.Items = trimmed(s.Items, depth, describe)
	}
	if depth > 0 && len(s.Properties) > 0 {
		t.Properties = make(map[string]*jsonschema.Schema, len(s.Properties))
		for name, p := range s.Properties {
			t.Properties[name] = trimmed(p, depth-1, describe-1)
		}
		t.PropertyOrder, t.AdditionalProperties = s.PropertyOrder, s.AdditionalProperties
		if describe > 0 {
			t.Required = s.Required
		}
	}
	if depth > 0 && s.AdditionalProperties != nil && len(s.Properties) == 0 {
		// A map: its values' schema.
		t.AdditionalProperties = trimmed(s.AdditionalProperties, depth-1, describe-1)
	}
	for _, alt := range s.AnyOf {
		t.AnyOf = append(t.AnyOf, trimmed(alt, depth, describe))
	}
	return t
}

// nonNull is s with each type that admits null ("null" and another, as Go's lists and pointers
// reflect) made the other alone: an argument left out is absent, not null.
func nonNull(s *jsonschema.Schema) *jsonschema.Schema {
	if s == nil {
		return nil
	}
	if len(s.Types) == 2 && slices.Contains(s.Types, "null") {
		s.Type = s.Types[0]
		if s.Type == "null" {
			s.Type = s.Types[1]
		}
		s.Types = nil
	}
	nonNull(s.Items)
	for _, p := range s.Properties {
		nonNull(p)
	}
	return s
}
