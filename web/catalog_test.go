package web_test

import (
	"maps"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/a2a"
	"github.com/agentcards/agentcards/cards/delegation"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/web"
	"github.com/agentcards/agentcards/web/api"
	"github.com/agentcards/agentcards/web/catalog"
	"github.com/agentcards/agentcards/web/client"
)

// TestCatalogueIsTheRoutes: the REST door is the catalogue's. Every route the server answers
// (HEAD aside, which every GET has, the MCP door's /mcp and the console's files) is a route of a request in the
// catalogue, and every request the catalogue puts on the REST door has its routes, on a server
// built with every service.
func TestCatalogueIsTheRoutes(t *testing.T) {
	e := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	served := map[string]bool{}
	for _, r := range e.echo.Routes() {
		if r.Method != http.MethodHead && r.Path != web.MCPPath && !isConsole(r.Path) {
			served[r.Method+" "+r.Path] = true
		}
	}
	listed := map[string]string{}
	for _, r := range catalog.Requests {
		if r.Doors&catalog.REST == 0 {
			continue
		}
		for _, route := range r.Routes {
			key := route.Method + " " + route.Path
			listed[key] = r.Name
		}
	}
	for _, route := range slices.Sorted(maps.Keys(served)) {
		if _, ok := listed[route]; !ok {
			t.Errorf("%s is served but is no request's route in the catalogue", route)
		}
	}
	for _, route := range slices.Sorted(maps.Keys(listed)) {
		if !served[route] {
			t.Errorf("%s (%s) is in the catalogue but not served", route, listed[route])
		}
	}
	if len(served) != len(listed) {
		t.Errorf("%d routes served, %d in the catalogue", len(served), len(listed))
	}
}

// TestCatalogueQueries: the query parameters the catalogue gives the search's GET route are the
// ones the search reads, and the callback route is where agents are told to post.
func TestCatalogueQueries(t *testing.T) {
	search, _ := catalog.Lookup("cards.search")
	if got := search.Routes[0].Query; !slices.Equal(got, web.WebSearchParams()) {
		t.Errorf("cards.search takes %v, the search reads %v", got, web.WebSearchParams())
	}
	complete, _ := catalog.Lookup("delegations.complete")
	if !strings.HasPrefix(complete.Routes[0].Path, web.WebCallbackPath+"/") {
		t.Errorf("delegations.complete is at %s, agents are sent to %s/...", complete.Routes[0].Path, web.WebCallbackPath)
	}
}

// jsonNames are the JSON names of a struct's fields, embedded structs' in place, leaving out
// those an `in` tag sends outside the body (path, query, header, view) when body is set.
func jsonNames(t reflect.Type, body bool) []string {
	var names []string
	for _, f := range client.Fields(t) {
		if body && f.In != "" && f.In != "body" {
			continue
		}
		names = append(names, f.Name)
	}
	slices.Sort(names)
	return names
}

// TestCatalogueTypes: each request's input sends its fields where its routes take them: a path
// field is a parameter of every route, a route's parameters are the input's fields, its query
// fields are the query parameters the route takes; and the wire types of web/api have the
// fields, under the same names, of what the services read and write.
func TestCatalogueTypes(t *testing.T) {
	param := regexp.MustCompile(`/:([A-Za-z]+)`)
	for _, r := range catalog.Requests {
		fields := map[string]client.Field{}
		for _, f := range client.Fields(r.In) {
			fields[f.Name] = f
		}
		for i, route := range r.Routes {
			params := map[string]bool{}
			for _, m := range param.FindAllStringSubmatch(route.Path, -1) {
				params[m[1]] = true
				if _, ok := fields[m[1]]; !ok {
					t.Errorf("%s: %s %s takes %s, which its input %v has no field for", r.Name, route.Method, route.Path, m[1], r.In)
				}
			}
			if route.Method != http.MethodGet && i > 0 {
				continue // the POST form of the search takes a body
			}
			var query []string
			for _, f := range fields {
				switch f.In {
				case "path":
					if !params[f.Name] {
						t.Errorf("%s: %s is a path field, but %s has no such parameter", r.Name, f.Name, route.Path)
					}
				case "query":
					query = append(query, f.Name)
				}
			}
			slices.Sort(query)
			if want := slices.Sorted(slices.Values(route.Query)); !slices.Equal(query, want) {
				t.Errorf("%s: the input's query fields are %v, %s %s takes %v", r.Name, query, route.Method, route.Path, want)
			}
		}
	}
	serverOwned := []string{"createdAt", "id", "liveness", "mirror", "revision", "source", "updatedAt"}
	mirrors := []struct {
		what     string
		api, svc reflect.Type
		leave    []string // fields of svc the wire type leaves out
	}{
		{"a card written", reflect.TypeFor[api.CardInput](), reflect.TypeFor[cards.Card](), serverOwned},
		{"a tenant created", reflect.TypeFor[api.TenantsCreate](), reflect.TypeFor[tenants.Input](), nil},
		{"a tenant changed", reflect.TypeFor[api.TenantsUpdate](), reflect.TypeFor[tenants.Patch](), nil},
		{"a role granted", reflect.TypeFor[api.RoleChange](), reflect.TypeFor[authz.Assignment](), nil},
		{"a role revoked", reflect.TypeFor[api.RoleRevoke](), reflect.TypeFor[authz.Assignment](), nil},
		{"a policy added", reflect.TypeFor[api.PolicyAdd](), reflect.TypeFor[authz.Policy](), nil},
		{"a policy removed", reflect.TypeFor[api.PolicyRemove](), reflect.TypeFor[authz.Policy](), nil},
		{"an access question", reflect.TypeFor[api.AccessCheck](), reflect.TypeFor[authz.Question](), nil},
		{"a delegation asked for", reflect.TypeFor[api.DelegationsCreate](), reflect.TypeFor[delegation.Request](), nil},
		{"a delegation record", reflect.TypeFor[api.Delegation](), reflect.TypeFor[delegation.Delegation](), nil},
		{"an A2A interface", reflect.TypeFor[api.A2AInterface](), reflect.TypeFor[delegation.Interface](), nil},
		{"a delegation import", reflect.TypeFor[api.DelegationsImport](), reflect.TypeFor[delegation.Import](), nil},
		{"an imported record", reflect.TypeFor[api.ImportedDelegation](), reflect.TypeFor[delegation.ImportRecord](), nil},
		{"what an import did", reflect.TypeFor[api.DelegationsImported](), reflect.TypeFor[delegation.Imported](), nil},
		{"an import", reflect.TypeFor[api.CardsImport](), reflect.TypeFor[a2a.ImportRequest](), nil},
		{"what a refresh did", reflect.TypeFor[api.CardsRefreshed](), reflect.TypeFor[a2a.Refreshed](), nil},
		{"a public agent", reflect.TypeFor[api.AgentSummary](), reflect.TypeFor[a2a.AgentSummary](), nil},
		{"a page of public agents", reflect.TypeFor[api.AgentPage](), reflect.TypeFor[a2a.AgentPage](), nil},
	}
	for _, m := range mirrors {
		// The tenant of a request is its path's; a query-carried field is a member all the same.
		wire := slices.DeleteFunc(jsonNames(m.api, false), func(s string) bool { return s == "tenant" })
		svc := slices.DeleteFunc(jsonNames(m.svc, false), func(s string) bool { return slices.Contains(m.leave, s) })
		if !slices.Equal(wire, svc) {
			t.Errorf("%s: web/api's %v has %v, the service's %v has %v", m.what, m.api, wire, m.svc, svc)
		}
	}
}
