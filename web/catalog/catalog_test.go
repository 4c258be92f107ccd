package catalog

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestNames: every request has one well-formed name, unique on every door, says what it does
// and who may call it, and says why when a door leaves it out; only reads may be answered from
// memory.
func TestNames(t *testing.T) {
	name := regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*\.[a-z][a-z0-9]*(_[a-z0-9]+)*$`)
	seen := map[string]string{}
	for _, r := range Requests {
		if !name.MatchString(r.Name) {
			t.Errorf("%q: not resource.verb in lowercase words joined by _", r.Name)
		}
		for _, door := range []string{"name " + r.Name, "tool " + r.MCPTool(), "command " + r.Command(), "method " + r.GoMethod()} {
			if other, dup := seen[door]; dup {
				t.Errorf("%s: %s is also %s's", r.Name, door, other)
			}
			seen[door] = r.Name
		}
		if r.Does == "" || r.Caller == "" || len(r.Routes) == 0 {
			t.Errorf("%s: says nothing of what it does, who calls it, or its route", r.Name)
		}
		if (r.Doors != Every) != (r.NotOn != "") {
			t.Errorf("%s: doors %04b, reason %q: a door left out needs a reason, and only then", r.Name, r.Doors, r.NotOn)
		}
		if r.FromMemory && !r.ReadOnly() {
			t.Errorf("%s: a write marked answerable from memory", r.Name)
		}
	}
}

func TestDoorNames(t *testing.T) {
	r := Request{Name: "cards.register_batch"}
	if r.MCPTool() != "cards_register_batch" || r.Command() != "agentcards cards register-batch" || r.GoMethod() != "Cards.RegisterBatch" {
		t.Fatalf("%q %q %q", r.MCPTool(), r.Command(), r.GoMethod())
	}
}

// apiTable is docs/api.md's table of requests, from the catalogue: each request's name, what
// it does, who may call it, its REST routes, MCP tool and CLI command (a dash where the request
// is not on that door).
func apiTable() string {
	param := regexp.MustCompile(`:([A-Za-z]+)`)
	var b strings.Builder
	b.WriteString("| request | what it does | who may call it | REST | MCP tool | CLI command |\n|---|---|---|---|---|---|\n")
	for _, r := range Requests {
		var routes []string
		for _, route := range r.Routes {
			path := strings.ReplaceAll(route.Path, `\:`, "\x00")
			path = strings.ReplaceAll(param.ReplaceAllString(path, "{$1}"), "\x00", ":")
			routes = append(routes, "`"+route.Method+" "+path+"`")
		}
		tool, command := "—", "—"
		if r.Doors&MCP != 0 {
			tool = "`" + r.MCPTool() + "`"
		}
		if r.Doors&CLI != 0 {
			command = "`" + r.Command() + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s |\n", r.Name, r.Does, r.Caller, strings.Join(routes, ", "), tool, command)
	}
	return b.String()
}

// TestAPIPageListsEveryRequest: docs/api.md's table of requests, between its markers, is the
// catalogue's, row for row.
func TestAPIPageListsEveryRequest(t *testing.T) {
	readme, err := os.ReadFile("../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- requests: from web/catalog -->\n", "<!-- end of requests -->"
	_, rest, ok := strings.Cut(string(readme), begin)
	table, _, ok2 := strings.Cut(rest, end)
	if !ok || !ok2 {
		t.Fatalf("docs/api.md: no table of requests between %q and %q", begin, end)
	}
	if want := apiTable(); table != want {
		t.Errorf("docs/api.md: the table of requests is not the catalogue's; it should read:\n%s", want)
	}
}
