package mcp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/agentcards/agentcards/web/catalog"
	"github.com/agentcards/agentcards/web/mcp"
	"github.com/agentcards/agentcards/web/webtest"
)

// The budgets of a tool list, as an agent is sent it: the default toolsets' list, and any one
// tool, in bytes of compact JSON.
const (
	defaultListBudget = 12 << 10
	toolBudget        = 2 << 10
)

// listed answers the tools a server of the toolsets given lists, as JSON by name, in order.
func listed(t *testing.T, toolsets ...string) (names []string, sizes map[string]int, total int) {
	t.Helper()
	s, _ := sessionOf(t, webtest.NewScript(func(w http.ResponseWriter, _ *http.Request, _ int) { webtest.Reply(w, 200, `{}`) }), beforeTheDay, toolsets...)
	list, err := s.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	sizes = map[string]int{}
	for _, tool := range list.Tools {
		raw, err := json.Marshal(tool)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
		sizes[tool.Name] = len(raw)
		total += len(raw)
	}
	slices.Sort(names)
	return names, sizes, total
}

// TestDefaultToolsets: a server configured with no toolsets serves an orchestrator (find,
// read, delegate) and the seeds' names, in at most 12 KB of tool list, and every tool of every
// toolset is at most 2 KB.
func TestDefaultToolsets(t *testing.T) {
	names, _, total := listed(t)
	want := []string{"cards_changes", "cards_get", "cards_search", "delegations_create", "delegations_get", "delegations_list",
		"mesh_delegate", "mesh_discover", "mesh_register", "mesh_unregister", "registry_list"}
	if !slices.Equal(names, want) {
		t.Errorf("default tools %v, want %v", names, want)
	}
	if total > defaultListBudget {
		t.Errorf("the default tool list is %d bytes, over %d", total, defaultListBudget)
	}
	t.Logf("the default tool list: %d tools, %d bytes", len(names), total)
	all, sizes, total := listed(t, mcp.All)
	for _, name := range all {
		if sizes[name] > toolBudget {
			t.Errorf("%s is %d bytes, over %d", name, sizes[name], toolBudget)
		}
	}
	t.Logf("every toolset: %d tools, %d bytes", len(all), total)
}

// TestToolsets: each toolset lists its tools and no other; every request of the MCP door is in
// one toolset; names are read in any case, all is every one, and an unknown one is refused.
func TestToolsets(t *testing.T) {
	in := map[string]string{}
	for _, set := range mcp.Toolsets {
		names, _, _ := listed(t, set)
		if len(names) == 0 {
			t.Errorf("toolset %s lists nothing", set)
		}
		for _, n := range names {
			if other, ok := in[n]; ok {
				t.Errorf("%s is in toolsets %s and %s", n, other, set)
			}
			in[n] = set
		}
	}
	for _, r := range catalog.Requests {
		if r.Doors&catalog.MCP != 0 && in[r.MCPTool()] != mcp.Toolset(r) {
			t.Errorf("%s: listed in toolset %q, want %q", r.MCPTool(), in[r.MCPTool()], mcp.Toolset(r))
		}
	}
	for _, old := range catalog.OldNames {
		if in[old.Name] != mcp.Old {
			t.Errorf("%s: listed in toolset %q, want old", old.Name, in[old.Name])
		}
	}
	all, _, _ := listed(t, mcp.All)
	if len(all) != len(in) {
		t.Errorf("all lists %d tools, the toolsets %d", len(all), len(in))
	}
	if names, _, _ := listed(t, " Admin", "CARDS"); !slices.Contains(names, "roles_grant") || !slices.Contains(names, "cards_register") || slices.Contains(names, "cards_search") {
		t.Errorf("admin and cards: %v", names)
	}
	if err := mcp.CheckToolsets([]string{"discovery", "tenancy"}); err == nil || !strings.Contains(err.Error(), `"tenancy"`) {
		t.Errorf("an unknown toolset: %v", err)
	}
}
