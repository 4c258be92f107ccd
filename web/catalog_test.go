package web_test

import (
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/web"
	"github.com/agentcards/agentcards/web/catalog"
)

// TestCatalogueIsTheRoutes: the REST door is the catalogue's. Every route the server answers
// (HEAD aside, which every GET has, and the MCP door's /mcp) is a route of a request in the
// catalogue, and every request the catalogue puts on the REST door has its routes, on a server
// built with every service.
func TestCatalogueIsTheRoutes(t *testing.T) {
	e := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	served := map[string]bool{}
	for _, r := range e.echo.Routes() {
		if r.Method != http.MethodHead && r.Path != web.MCPPath {
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
