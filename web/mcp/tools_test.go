package mcp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentcards/agentcards/web/webtest"
)

// TestToolsListed: the server announces itself with its version and instructions and lists the
// tools of the MCP door and the old names, and no request the door leaves out. A few tools, as
// an agent reads them: their hints, their arguments (those required, the enums, nothing else
// taken), their output schema.
func TestToolsListed(t *testing.T) {
	s, _ := session(t, webtest.NewScript(func(w http.ResponseWriter, _ *http.Request, _ int) { webtest.Reply(w, 200, `{}`) }), beforeTheDay)
	init := s.InitializeResult()
	if init.ServerInfo.Name != "agentcards" || init.ServerInfo.Version != "1.2.3" || !strings.Contains(init.Instructions, "cards_search") {
		t.Errorf("initialize: %+v, instructions %q", init.ServerInfo, init.Instructions)
	}
	list, err := s.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*sdk.Tool{}
	var names []string
	for _, tool := range list.Tools {
		byName[tool.Name] = tool
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	want := []string{"a2a_agents", "a2a_card", "a2a_catalog", "access_check", "audit_list", "cards_changes", "cards_get", "cards_heartbeat", "cards_import",
		"cards_refresh", "cards_register", "cards_register_batch", "cards_remove", "cards_replace", "cards_search", "cards_update",
		"delegations_create", "delegations_get", "delegations_import", "delegations_list", "keys_list", "mesh_delegate", "mesh_discover", "mesh_register",
		"mesh_unregister", "policies_add", "policies_list", "policies_remove", "registry_list", "roles_grant", "roles_list",
		"roles_revoke", "secrets_remove", "secrets_set", "sources_create", "sources_get", "sources_list", "sources_remove", "sources_update", "synonyms_list", "synonyms_put", "synonyms_remove", "tenants_create", "tenants_delete", "tenants_get", "tenants_list", "tenants_update",
		"trust_get", "trust_list", "trust_put", "trust_remove",
		"webhooks_create", "webhooks_deliveries", "webhooks_get", "webhooks_list", "webhooks_remove", "webhooks_update"}
	if !slices.Equal(names, want) {
		t.Errorf("tools %v, want %v", names, want)
	}

	// hints are readOnly, idempotent, destructive, openWorld.
	for name, hints := range map[string][4]bool{
		"cards_search":       {true, true, false, false},
		"access_check":       {true, true, false, false}, // a question, though a POST
		"cards_replace":      {false, true, true, false},
		"cards_remove":       {false, true, true, false},
		"cards_update":       {false, false, true, false},
		"cards_register":     {false, false, false, false},
		"cards_import":       {false, false, false, true},
		"delegations_create": {false, false, false, true},
		"mesh_unregister":    {false, true, true, false}, // as cards_remove
		"registry_list":      {true, true, false, false}, // as cards_search
	} {
		a := byName[name].Annotations
		if a == nil || a.OpenWorldHint == nil || (a.DestructiveHint == nil) != a.ReadOnlyHint {
			t.Errorf("%s: no hints, or destructiveHint on a read-only tool: %+v", name, a)
			continue
		}
		destructive := a.DestructiveHint != nil && *a.DestructiveHint
		if got := [4]bool{a.ReadOnlyHint, a.IdempotentHint, destructive, *a.OpenWorldHint}; got != hints {
			t.Errorf("%s: hints (readOnly, idempotent, destructive, openWorld) %v, want %v", name, got, hints)
		}
	}

	// at is the member of a tool's schema at the path given, as JSON.
	at := func(schema any, path ...string) []byte {
		t.Helper()
		raw, err := json.Marshal(schema)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatal(err)
		}
		for _, p := range path {
			m, _ := v.(map[string]any)
			v = m[p]
		}
		raw, _ = json.Marshal(v)
		return raw
	}
	// cards_get takes a tenant (the token's by default) and the agentId it requires, and nothing else.
	webtest.JSONEqual(t, "cards_get's arguments", at(byName["cards_get"].InputSchema), []byte(`{
		"type": "object", "additionalProperties": false, "required": ["agentId"],
		"properties": {
			"tenant": {"type": "string", "description": "the tenant; the token's by default"},
			"agentId": {"type": "string", "description": "the agent's id"}}}`))
	create := byName["delegations_create"].InputSchema
	webtest.JSONEqual(t, "delegations_create's required", at(create, "required"), []byte(`["agentId", "capability", "task"]`))
	webtest.JSONEqual(t, "delegations_create's modes", at(create, "properties", "mode", "enum"), []byte(`["sync", "async"]`))
	webtest.JSONEqual(t, "delegations_create's transports", at(create, "properties", "transport", "enum"), []byte(`["http", "a2a"]`))
	// A list's enum is its items'; a body that is a JSON document is an object.
	webtest.JSONEqual(t, "cards_search's status", at(byName["cards_search"].InputSchema, "properties", "status", "items"),
		[]byte(`{"type": "string", "enum": ["active", "deprecated", "disabled"]}`))
	webtest.JSONEqual(t, "cards_update's patch", at(byName["cards_update"].InputSchema, "properties", "patch", "type"), []byte(`"object"`))
	// A list takes no null; a field that is an object names its members in its description, and
	// its schema stops there.
	webtest.JSONEqual(t, "cards_register's capabilities", at(byName["cards_register"].InputSchema, "properties", "capabilities"),
		[]byte(`{"type": "array", "items": {"type": "object"}, "description": "what it can be asked to do: [{name, title, description, inputSchema, outputSchema, tags, examples}]"}`))
	// An output is an object; the description says what it holds.
	for _, name := range []string{"cards_search", "cards_get", "a2a_card", "mesh_discover"} {
		webtest.JSONEqual(t, name+"'s output schema", at(byName[name].OutputSchema), []byte(`{"type": "object"}`))
	}

	// The old names say so, with the new name and the day.
	if d := byName["mesh_discover"].Description; !strings.HasPrefix(d, "Old name: mesh_discover was renamed to cards_search. This name stops working on 2027-03-01; use cards_search. ") {
		t.Errorf("mesh_discover's description: %q", d)
	}
	if d := byName["cards_remove"].Description; !strings.HasPrefix(d, "Remove a card. The card is gone for good") || !strings.Contains(d, "Who may call it: cards:delete.") {
		t.Errorf("cards_remove's description: %q", d)
	}
}
