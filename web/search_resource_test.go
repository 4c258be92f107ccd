package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// resourceCorpus declares resources in each of the forms the resource filter tells apart: no
// path, a path, a path with a trailing slash, a pattern, a neighbouring path and another port.
func resourceCorpus() []map[string]any {
	card := func(id string, caps []string, resources ...string) map[string]any {
		res := []any{}
		for _, r := range resources {
			res = append(res, map[string]any{"uri": r, "access": "read"})
		}
		cs := []any{}
		for _, c := range caps {
			cs = append(cs, map[string]any{"name": c, "description": "Does " + c})
		}
		return map[string]any{"agentId": id, "name": id, "description": "A bot.", "protocols": []string{"http"},
			"capabilities": cs, "resources": res}
	}
	return []map[string]any{
		card("api-bot", nil, "https://api.example.com"),
		card("data-bot", []string{"export"}, "https://github.com/acme/*", "https://erp.example.com/data"),
		card("slash-bot", nil, "https://erp.example.com/data/"),
		card("glob-bot", []string{"export"}, "https://erp.example.com/reports/*", "https://erp.example.com/data/*"),
		card("db-bot", nil, "https://erp.example.com/database"),
		card("port-bot", nil, "https://api.example.com:8443/"),
		card("none-bot", nil),
	}
}

// resourceHit is one item of a search answer, with what the resource filter adds.
type resourceHit struct {
	Card                struct{ AgentID string } `json:"card"`
	Score               *float64                 `json:"score"`
	MatchedCapabilities []string                 `json:"matchedCapabilities"`
	MatchedResources    []string                 `json:"matchedResources"`
}

type resourceAnswer struct {
	Total      int           `json:"total"`
	Items      []resourceHit `json:"items"`
	NextCursor string        `json:"nextCursor"`
	raw        []map[string]json.RawMessage
}

// hits renders the page as "agentId [matchedResources]" in order, for comparing with a want.
func (a resourceAnswer) hits() string {
	var out []string
	for _, h := range a.Items {
		out = append(out, fmt.Sprintf("%s %v", h.Card.AgentID, h.MatchedResources))
	}
	return strings.Join(out, "; ")
}

func decodeResourceAnswer(t *testing.T, r response) resourceAnswer {
	t.Helper()
	expect(t, r, http.StatusOK)
	var a resourceAnswer
	r.json(t, &a)
	var raw struct{ Items []map[string]json.RawMessage }
	r.json(t, &raw)
	a.raw = raw.Items
	return a
}

func resourceQuery(uris ...string) string {
	var parts []string
	for _, u := range uris {
		parts = append(parts, "resource="+url.QueryEscape(u))
	}
	return strings.Join(parts, "&")
}

// erp is the host of most resources of resourceCorpus.
const erp = "https://erp.example.com"

// resourceCase is a resource filter of TestSearchResourceMatching: the URIs asked, and the
// hits wanted, "agentId [matchedResources]; ..." in answer order.
type resourceCase struct {
	name  string
	asked []string
	want  string
}

// resourceCases are the resource filters asked of resourceCorpus, each with its hits.
var resourceCases = []resourceCase{
	{"no path covers every path", []string{"https://api.example.com/v1/users/7"},
		"api-bot [https://api.example.com]"},
	{"no path covers the bare host", []string{"https://api.example.com"},
		"api-bot [https://api.example.com]"},
	{"another port is another place", []string{"https://api.example.com:8443/v1"},
		"port-bot [https://api.example.com:8443/]"},
	{"a path and a trailing slash cover themselves; a pattern does not", []string{erp + "/data"},
		"data-bot [" + erp + "/data]; slash-bot [" + erp + "/data/]"},
	{"a path covers below it, as a pattern does", []string{erp + "/data/x/y"},
		"data-bot [" + erp + "/data]; glob-bot [" + erp + "/data/*]; slash-bot [" + erp + "/data/]"},
	{"never a longer segment", []string{erp + "/database"},
		"db-bot [" + erp + "/database]"},
	{"a pattern asked for", []string{erp + "/data/*"},
		"data-bot [" + erp + "/data]; glob-bot [" + erp + "/data/*]; slash-bot [" + erp + "/data/]"},
	{"every URI asked must be covered, each resource named once in the card's order",
		[]string{"https://github.com/acme/web", erp + "/data/x", erp + "/data/y"},
		"data-bot [https://github.com/acme/* " + erp + "/data]"},
	{"two declared resources for two URIs", []string{erp + "/data/x", erp + "/reports/q1"},
		"glob-bot [" + erp + "/reports/* " + erp + "/data/*]"},
	{"dot segments resolve before matching", []string{erp + "/data/../database/x"},
		"db-bot [" + erp + "/database]"},
	{"an encoded .. does not leave /data", []string{erp + "/data/%2e%2e/secret"}, ""},
	{"an encoded / is not a separator", []string{erp + "/data%2Fx"}, ""},
	{"a query string is not part of the path", []string{erp + "/database?under=/data"},
		"db-bot [" + erp + "/database]"},
	{"scheme", []string{"http://erp.example.com/data/x"}, ""},
	{"host case folds", []string{"https://ERP.Example.com:443/data"},
		"data-bot [" + erp + "/data]; slash-bot [" + erp + "/data/]"},
	{"path case does not", []string{erp + "/Data"}, ""},
}

func TestSearchResourceMatching(t *testing.T) {
	forEachDialectAndIndex(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		alice := e.token("alice", "acme", false)
		for _, c := range resourceCorpus() {
			expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, c), http.StatusCreated)
		}
		get := func(query string) resourceAnswer {
			t.Helper()
			return decodeResourceAnswer(t, e.do("GET", "/v1/tenants/acme/cards?"+query, alice, nil))
		}
		for _, c := range resourceCases {
			a := get(resourceQuery(c.asked...))
			if a.hits() != c.want || a.Total != len(a.Items) {
				t.Errorf("%s: %q (total %d), want %q", c.name, a.hits(), a.Total, c.want)
			}
			for _, h := range a.Items {
				if h.Score != nil || h.MatchedCapabilities != nil {
					t.Errorf("%s: score or matchedCapabilities without q: %+v", c.name, h)
				}
			}
			// POST .../cards/search answers the same.
			r := e.do("POST", "/v1/tenants/acme/cards/search", alice, map[string]any{"resources": c.asked})
			if p := decodeResourceAnswer(t, r); p.hits() != a.hits() || p.Total != a.Total {
				t.Errorf("%s: POST %q (total %d), GET %q", c.name, p.hits(), p.Total, a.hits())
			}
		}
		checkMatchedResourcesBeside(t, get)

		// A URI whose encoded "/" or "\" hides a dot segment is refused, as one that does not parse.
		for _, bad := range []string{erp + "/data/..%2Fsecret", erp + "/data/..%5Csecret", "/data", "erp.example.com/data"} {
			expect(t, e.do("GET", "/v1/tenants/acme/cards?"+resourceQuery(bad), alice, nil), http.StatusBadRequest, "invalid")
		}
	})
}

// checkMatchedResourcesBeside checks how matchedResources stands beside the rest of a search
// of resourceCorpus, asked with get: absent without a resource filter, beside score and
// matchedCapabilities with q, and on every page when paging, which keeps the total.
func checkMatchedResourcesBeside(t *testing.T, get func(query string) resourceAnswer) {
	for _, query := range []string{"", "q=export", "protocol=http&limit=3"} {
		a := get(query)
		if len(a.raw) == 0 {
			t.Fatalf("%q: no items", query)
		}
		for _, item := range a.raw {
			if _, ok := item["matchedResources"]; ok {
				t.Errorf("%q: matchedResources without a resource filter: %s", query, item["matchedResources"])
			}
		}
	}

	a := get("q=export&" + resourceQuery(erp+"/data/x"))
	if a.hits() != "data-bot ["+erp+"/data]; glob-bot ["+erp+"/data/*]" || a.Total != 2 {
		t.Fatalf("q=export with a resource: %q (total %d)", a.hits(), a.Total)
	}
	for _, h := range a.Items {
		if h.Score == nil || *h.Score <= 0 || *h.Score > 1 || fmt.Sprint(h.MatchedCapabilities) != "[export]" {
			t.Errorf("q=export with a resource: %+v", h)
		}
	}

	var pages []string
	query := "limit=2&" + resourceQuery(erp+"/data/x")
	for i := 0; ; i++ {
		a := get(query)
		if a.Total != 3 {
			t.Errorf("page %d: total %d, want 3", i+1, a.Total)
		}
		pages = append(pages, a.hits())
		if a.NextCursor == "" || i > 3 {
			break
		}
		query = "limit=2&" + resourceQuery(erp+"/data/x") + "&cursor=" + url.QueryEscape(a.NextCursor)
	}
	want := []string{"data-bot [" + erp + "/data]; glob-bot [" + erp + "/data/*]", "slash-bot [" + erp + "/data/]"}
	if fmt.Sprint(pages) != fmt.Sprint(want) {
		t.Errorf("pages %q, want %q", pages, want)
	}
}
