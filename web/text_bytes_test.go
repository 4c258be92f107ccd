package web_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/agentcards/agentcards/cards/a2a/a2atest"
	"github.com/agentcards/agentcards/cards/agenttest"
	"github.com/agentcards/agentcards/cards/delegation"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/tenants/paging"
	"github.com/agentcards/agentcards/web/catalog"
	"github.com/agentcards/agentcards/web/webtest"
)

// badIDs are path ids no id can be: a NUL, bytes that are not UTF-8 (%ff is kept escaped by the
// router, %FF is not), and a NUL inside an id.
var badIDs = []string{"%00", "%ff", "%FF", "a%00b"}

// exchange is one request of the bad-bytes test, and its answer as every database must give it.
type exchange struct {
	method, path, token string
	body                any
	// status, when set, is the answer it must get; says, a text its body must hold.
	status int
	says   string
	// missing marks a request with a well-formed id that names nothing; asMissing one that must
	// be answered as the last of those was (status and code).
	missing, asMissing bool
	// headers are name, value pairs sent with it.
	headers []string
}

// TestBadBytesAnswerAlikeOnEveryDatabase: text no database column can hold alike (a NUL, bytes
// that are not UTF-8) gets the same answer, status and body, on SQLite, Postgres and MySQL, on
// every route that takes an id from its path (from the catalogue) and in every name: an id that
// cannot be an id is answered as a missing one (404), or 400 where the request would create it
// (PUT of a card); a name with a control character is 400 naming it; free text inside the card
// document and delegation records is kept, the bytes that are not UTF-8 as U+FFFD. No request
// changes what was stored, and none logs an error.
func TestBadBytesAnswerAlikeOnEveryDatabase(t *testing.T) {
	answers := map[string][]string{}
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		var logged webtest.LogBuffer
		e := newEnvWith(t, storagetest.Open(t, dialect), envOptions{allowLoopback: true, log: slog.New(slog.NewTextHandler(&logged, nil))})
		a := agenttest.New(t, agenttest.Answer(http.StatusAccepted, `{}`))
		alice, olga := e.delegationSetup("acme", "agt1", a.Endpoint())
		admin := e.admin()
		// Three async delegations: one whose callback the bad ids aim at, two that take results
		// with bad bytes.
		var ids, paths []string
		for range 3 {
			r := e.do("POST", "/v1/tenants/acme/delegations", olga, delegate("agt1", "async"))
			expect(t, r, http.StatusAccepted)
			d := decodeDelegation(t, r)
			got := waitCall(t, a, d.ID).Task
			e.waitStatus("acme", d.ID, olga, delegation.StatusAccepted)
			ids, paths = append(ids, d.ID), append(paths, e.callbackPath(t, "acme", d.ID, got))
		}
		token := paths[0][strings.Index(paths[0], "?token=")+len("?token="):]

		stored := []string{"/v1/tenants", "/v1/tenants/acme", "/v1/tenants/acme/cards/agt1", "/v1/tenants/acme/cards",
			"/v1/tenants/acme/roles", "/v1/tenants/acme/policies", "/v1/tenants/acme/delegations/" + ids[0]}
		before := snapshot(t, e, admin, stored)

		var all []exchange
		all = append(all, pathIDExchanges(ids[0], token, admin, alice)...)
		all = append(all, textExchanges(t, alice, admin)...)
		all = append(all,
			exchange{method: "POST", path: paths[1], body: map[string]any{"status": "failed", "error": "a\u0000b"}, status: http.StatusNoContent},
			exchange{method: "POST", path: paths[2], body: "{\"status\": \"completed\", \"result\": {\"k\": \"a\xffb\"}}", status: http.StatusNoContent},
			exchange{method: "GET", path: "/v1/tenants/acme/delegations/" + ids[1], token: olga, status: http.StatusOK},
			exchange{method: "GET", path: "/v1/tenants/acme/delegations/" + ids[2], token: olga, status: http.StatusOK},
		)
		var got []string
		var missing response
		var missingCode string
		for _, x := range all {
			r := e.do(x.method, x.path, x.token, x.body, x.headers...)
			if r.status >= 500 || x.status != 0 && r.status != x.status {
				t.Errorf("%s %s: %d %s, want %d", x.method, x.path, r.status, r.body, x.status)
			}
			code := ""
			if r.status >= 400 {
				code = errCodeAt(t, x.path, r) // the one error body, or agentkit-mesh's on its routes
			}
			if x.missing {
				missing, missingCode = r, code
			}
			if x.asMissing && (r.status != missing.status || r.status >= 400 && code != missingCode) {
				t.Errorf("%s %s: %d %s, not as an id that names nothing: %d %s", x.method, x.path, r.status, r.body, missing.status, missing.body)
			}
			if !strings.Contains(string(r.body), x.says) {
				t.Errorf("%s %s: %s, want it to say %q", x.method, x.path, r.body, x.says)
			}
			got = append(got, normalized([]byte(fmt.Sprintf("%s %s -> %d %s", x.method, x.path, r.status, r.body))))
		}
		answers[dialect] = got

		// What the delegation records kept of the bad bytes: a NUL and a byte that is not UTF-8
		// as U+FFFD, on every database.
		if d := e.storedDelegation("acme", ids[1]); d.Error != "a\uFFFDb" {
			t.Errorf("callback error stored as %q", d.Error)
		}
		if d := e.storedDelegation("acme", ids[2]); string(d.Result) != "{\"k\": \"a\uFFFDb\"}" {
			t.Errorf("callback result stored as %s", d.Result)
		}
		if after := snapshot(t, e, admin, stored); strings.Join(after, "\n") != strings.Join(before, "\n") {
			t.Errorf("stored data changed:\nbefore %s\nafter  %s", strings.Join(before, "\n"), strings.Join(after, "\n"))
		}
		if strings.Contains(logged.String(), "level=ERROR") {
			t.Errorf("errors logged:\n%s", logged.String())
		}
	})
	var first string
	for _, d := range storagetest.Dialects() {
		got, ok := answers[d]
		if !ok {
			continue
		}
		if first == "" {
			first = d
			continue
		}
		want := answers[first]
		for i := range min(len(got), len(want)) {
			if got[i] != want[i] {
				t.Errorf("%s answers otherwise than %s:\n%s\n%s", d, first, got[i], want[i])
			}
		}
		if len(got) != len(want) {
			t.Errorf("%s answered %d requests, %s %d", d, len(got), first, len(want))
		}
	}
}

// pathIDExchanges are requests to every REST route of the catalogue that takes ids from its
// path, for each of its parameters: once with a well-formed id that names nothing, then once
// with each bad id (the other parameters well formed: tenant acme, agent agt1, delegation id and
// its callback token). A bad id is answered as the id that names nothing, but where a card PUT
// would create the card: there it is 400, as an invalid agentId in the body is.
func pathIDExchanges(id, token, admin, alice string) []exchange {
	good := map[string]string{"tenant": "acme", "agentId": "agt1", "name": "agt1", "id": id, "domain": "example.com"}
	none := map[string]string{"tenant": "nope", "agentId": "agt9", "name": "agt9", "id": "01a24399-0000-7000-8000-000000000000", "domain": "nope.example"}
	var out []exchange
	for _, r := range catalog.Requests {
		if r.Doors&catalog.REST == 0 {
			continue
		}
		for _, route := range r.Routes {
			path := strings.ReplaceAll(route.Path, `\:`, ":")
			var params []string
			for _, seg := range strings.Split(path, "/") {
				if name, ok := strings.CutPrefix(seg, ":"); ok {
					params = append(params, name)
				}
			}
			for _, bad := range params {
				for _, v := range append([]string{none[bad]}, badIDs...) {
					p := path
					for _, name := range params {
						value := good[name]
						if name == bad {
							value = v
						}
						p = strings.Replace(p, ":"+name, value, 1)
					}
					if len(route.Query) > 0 && route.Query[0] == "token" {
						p += "?token=" + token
					}
					x := exchange{method: route.Method, path: p, token: alice, missing: v == none[bad], asMissing: v != none[bad]}
					if bad == "tenant" || path == "/v1/tenants/:tenant" {
						x.token = admin // a platform admin: past every tenant gate
					}
					if route.Method != "GET" && route.Method != "DELETE" {
						x.body = map[string]any{}
					}
					if bad == "agentId" && route.Method == "PUT" && strings.HasSuffix(path, ":agentId") && !x.missing {
						x.asMissing, x.status = false, http.StatusBadRequest
					}
					out = append(out, x)
				}
			}
		}
	}
	return out
}

// textExchanges send a NUL or a control character in every name that has a column of its own,
// and bad bytes in the query parameters and the free text that reach the database.
func textExchanges(t *testing.T, alice, admin string) []exchange {
	card := func(agentID, name string) map[string]any {
		c := sampleCard(agentID)
		c["name"] = name
		return c
	}
	a2a := a2atest.SampleV1(t)
	a2a["name"] = "Geo\u0000Route"
	cursor := paging.EncodeCursor("delegations", "\u0000")
	const cardName, tenantName = "name: must not contain control characters", "name must not contain control characters"
	return []exchange{
		{method: "POST", path: "/v1/tenants/acme/cards", token: alice, body: card("agt2", "a\u0000b"), status: http.StatusBadRequest, says: cardName},
		{method: "POST", path: "/v1/tenants/acme/cards", token: alice, body: card("agt2", "line\nbreak"), status: http.StatusBadRequest, says: cardName},
		{method: "PUT", path: "/v1/tenants/acme/cards/agt2", token: alice, body: card("agt2", "a\u0000b"), status: http.StatusBadRequest, says: cardName},
		{method: "PUT", path: "/v1/tenants/acme/cards/agt1", token: alice, body: card("agt1", "a\u0000b"), status: http.StatusBadRequest, says: cardName},
		{method: "PATCH", path: "/v1/tenants/acme/cards/agt1", token: alice, body: map[string]any{"name": "a\u0000b"}, status: http.StatusBadRequest, says: cardName},
		{method: "POST", path: "/v1/tenants/acme/cards:batch", token: alice, body: []any{card("agt3", "ok"), card("agt4", "a\u0000b")}, status: http.StatusBadRequest, says: "cards[1]: " + cardName},
		{method: "POST", path: "/v1/tenants/acme/cards/import", token: alice, body: map[string]any{"agentId": "agt5", "card": a2a}, status: http.StatusBadRequest, says: cardName},
		{method: "POST", path: "/v1/tenants", token: admin, body: map[string]any{"id": "t2", "name": "a\u0000b", "admins": []string{}}, status: http.StatusBadRequest, says: tenantName},
		{method: "PATCH", path: "/v1/tenants/acme", token: admin, body: map[string]any{"name": "a\u0000b"}, status: http.StatusBadRequest, says: tenantName},
		{method: "PATCH", path: "/v1/tenants/acme", token: admin, body: map[string]any{"name": "tab\there"}, status: http.StatusBadRequest, says: tenantName},
		// Text inside the card document is escaped there: a NUL is kept, a byte that is not
		// UTF-8 is read as U+FFFD (as encoding/json reads it in a string).
		{method: "POST", path: "/v1/tenants/acme/cards", token: alice, body: map[string]any{"agentId": "agt6", "name": "n", "description": "a\u0000b", "metadata": map[string]any{"k": "\u0000"}}, status: http.StatusCreated},
		{method: "POST", path: "/v1/tenants/acme/cards", token: alice, body: "{\"agentId\": \"agt7\", \"name\": \"n\xff\", \"metadata\": {\"k\": \"\xff\", \"\xfe\": [\"\xc3\"]}}", status: http.StatusCreated},
		{method: "GET", path: "/v1/tenants/acme/cards/agt7", token: alice, status: http.StatusOK, says: "\"name\":\"n\uFFFD\""},
		{method: "DELETE", path: "/v1/tenants/acme/cards/agt6", token: alice, status: http.StatusNoContent},
		{method: "DELETE", path: "/v1/tenants/acme/cards/agt7", token: alice, status: http.StatusNoContent},
		// Query parameters that reach a query.
		{method: "GET", path: "/v1/tenants/acme/delegations?cursor=" + cursor, token: alice, status: http.StatusBadRequest},
		{method: "GET", path: "/v1/tenants/acme/delegations?agentId=%00", token: alice, status: http.StatusBadRequest},
		{method: "GET", path: "/v1/tenants/acme/delegations?agentId=%ff", token: alice, status: http.StatusBadRequest},
		{method: "GET", path: "/v1/tenants/acme/delegations?status=%ff", token: alice, status: http.StatusBadRequest},
		{method: "GET", path: "/v1/tenants/acme/audit?principal=%ff", token: alice, status: http.StatusBadRequest},
		{method: "GET", path: "/v1/tenants/acme/audit?object=cards/%00", token: alice, status: http.StatusBadRequest},
		{method: "GET", path: "/v1/tenants/acme/audit?cursor=" + paging.EncodeCursor("audit", "\u0000"), token: alice, status: http.StatusBadRequest},
		{method: "GET", path: "/a2a/acme/.well-known/ai-catalog.json?cursor=" + paging.EncodeCursor("agents", "\u0000"), status: http.StatusBadRequest},
		{method: "GET", path: "/v1/tenants/acme/cards?name=%00", token: alice, status: http.StatusOK},
		{method: "GET", path: "/v1/tenants/acme/cards?tag=%ff", token: alice, status: http.StatusOK},
		{method: "GET", path: "/v1/tenants/acme/cards?cursor=" + paging.EncodeCursor("search", map[string]any{"a": "\u0000"}), token: alice, status: http.StatusBadRequest},
		{method: "GET", path: "/a2a/acme/agents?cursor=" + paging.EncodeCursor("agents", "\u0000"), status: http.StatusBadRequest},
		{method: "DELETE", path: "/v1/tenants/acme/roles?subject=%ff&role=reader", token: alice},
		{method: "DELETE", path: "/v1/tenants/acme/roles?subject=a%00&role=reader", token: alice, status: http.StatusBadRequest},
		{method: "DELETE", path: "/v1/tenants/acme/policies?subject=%ff&object=cards/%ff&action=cards:read&effect=allow", token: alice},
		// Header values (a client cannot send a NUL in one, but may send bytes that are not UTF-8).
		{method: "GET", path: "/v1/tenants/acme/cards/agt1", token: alice, headers: []string{"X-Request-Id", "a\xffb"}, status: http.StatusOK},
		{method: "GET", path: "/v1/tenants/acme/cards/agt1", token: alice, headers: []string{"If-None-Match", `"\xff"`}, status: http.StatusOK},
		{method: "PATCH", path: "/v1/tenants/acme/cards/agt1", token: alice, body: map[string]any{"description": "x"}, headers: []string{"If-Match", `"\xff"`}, status: http.StatusPreconditionFailed},
		{method: "DELETE", path: "/v1/tenants/acme/cards/agt1", token: alice, headers: []string{"If-Match", "\xff"}, status: http.StatusPreconditionFailed},
		{method: "GET", path: "/v1/tenants/acme/cards", token: "\xff"},
		{method: "POST", path: "/v1/tenants/acme/authorize", token: alice, body: map[string]any{"subject": "a\u0000", "object": "cards/agt1", "action": "cards:read"}, status: http.StatusBadRequest},
		{method: "POST", path: "/v1/tenants/acme/roles", token: alice, body: map[string]any{"subject": "a\u0000", "role": "reader"}, status: http.StatusBadRequest},
		{method: "POST", path: "/v1/tenants/acme/policies", token: alice, body: map[string]any{"subject": "bob", "object": "cards/a\u0000", "action": "cards:read", "effect": "allow"}, status: http.StatusBadRequest},
	}
}

// snapshot reads paths as a platform admin, for a comparison of what is stored before and after.
func snapshot(t *testing.T, e *env, admin string, paths []string) []string {
	t.Helper()
	out := make([]string, len(paths))
	for i, p := range paths {
		r := e.do("GET", p, admin, nil)
		expect(t, r, http.StatusOK)
		out[i] = p + " " + string(r.body)
	}
	return out
}

// variable matches what differs between two runs of the same requests: request ids, UUIDs,
// times, latencies, tokens and the test agent's port.
var variable = regexp.MustCompile(`127\.0\.0\.1:\d+|"requestId":"[0-9a-f]+"|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|"\d{4}-\d\d-\d\dT[0-9:.]+Z"|"latencyMs":\d+|token=[^"& ]+`)

// normalized is an answer's body without what differs between runs.
func normalized(body []byte) string { return variable.ReplaceAllString(string(body), "~") }
