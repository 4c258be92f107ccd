package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/a2a/a2atest"
	"github.com/agentcards/agentcards/cards/agenttest"
	"github.com/agentcards/agentcards/storage/storagetest"
)

// nestedJSON is a JSON object nested depth levels ({} is one, {"a":{}} two).
func nestedJSON(depth int) json.RawMessage {
	return json.RawMessage(strings.Repeat(`{"a":`, depth-1) + "{}" + strings.Repeat("}", depth-1))
}

// TestJSONDepthBound: free-form JSON nested as deep as server.maxJsonDepth allows is taken on
// every write of a card (POST, PUT, PATCH, a batch); one level deeper is refused with 400
// naming the field, there, in an A2A import and in a delegation's context, and nothing is
// written. The bound is the configured one (its default, and another).
func TestJSONDepthBound(t *testing.T) {
	for _, configured := range []int{0, 12} {
		bound := configured
		if bound == 0 {
			bound = cards.DefaultMaxJSONDepth
		}
		t.Run(fmt.Sprint(bound), func(t *testing.T) {
			forEachDialectWith(t, envOptions{maxJSONDepth: configured, allowLoopback: true}, func(t *testing.T, e *env) {
				e.mkTenant("acme", "alice")
				alice := e.token("alice", "acme", false)
				card := func(agentID string, set func(c map[string]any)) map[string]any {
					c := sampleCard(agentID)
					set(c)
					return c
				}
				metadata := func(depth int) func(map[string]any) {
					return func(c map[string]any) { c["metadata"] = nestedJSON(depth) }
				}
				schema := func(member string, depth int) func(map[string]any) {
					return func(c map[string]any) {
						c["capabilities"] = []any{map[string]any{"name": "review_pr", member: nestedJSON(depth)}}
					}
				}
				schemes := func(depth int) func(map[string]any) {
					return func(c map[string]any) { c["a2a"] = map[string]any{"securitySchemes": nestedJSON(depth)} }
				}
				refused := func(r response, field string) {
					t.Helper()
					expect(t, r, http.StatusBadRequest, "invalid")
					if want := fmt.Sprintf("%s: nested deeper than %d levels", field, bound); !strings.Contains(string(r.body), want) {
						t.Fatalf("%s, want it to say %q", r.body, want)
					}
				}

				// At the bound: taken on every write.
				const cardsPath = "/v1/tenants/acme/cards"
				expect(t, e.do("POST", cardsPath, alice, card("agt1", metadata(bound))), http.StatusCreated)
				expect(t, e.do("PUT", cardsPath+"/agt1", alice, card("agt1", schema("inputSchema", bound))), http.StatusOK)
				expect(t, e.do("PATCH", cardsPath+"/agt1", alice, map[string]any{"metadata": nestedJSON(bound)}), http.StatusOK)
				expect(t, e.do("POST", cardsPath+":batch", alice, []any{card("agt2", schemes(bound)), card("agt3", schema("outputSchema", bound))}), http.StatusCreated)
				stored := e.getCard("acme", "agt1")
				expect(t, stored, http.StatusOK)

				// One level deeper: refused, naming the field.
				refused(e.do("POST", cardsPath, alice, card("agt4", metadata(bound+1))), "metadata")
				refused(e.do("PUT", cardsPath+"/agt1", alice, card("agt1", schema("inputSchema", bound+1))), "capabilities[0].inputSchema")
				refused(e.do("PUT", cardsPath+"/agt4", alice, card("agt4", schemes(bound+1))), "a2a.securitySchemes")
				refused(e.do("PATCH", cardsPath+"/agt1", alice, map[string]any{"metadata": nestedJSON(bound + 1)}), "metadata")
				refused(e.do("PATCH", cardsPath+"/agt1", alice, map[string]any{"capabilities": []any{map[string]any{"name": "review_pr", "outputSchema": nestedJSON(bound + 1)}}}), "capabilities[0].outputSchema")
				refused(e.do("POST", cardsPath+":batch", alice, []any{card("agt4", metadata(1)), card("agt5", schema("outputSchema", bound+1))}), "cards[1]: capabilities[0].outputSchema")
				a2a := a2atest.SampleV1(t)
				a2a["securitySchemes"] = nestedJSON(bound + 1)
				refused(e.do("POST", cardsPath+"/import", alice, map[string]any{"agentId": "agt4", "card": a2a}), "card.securitySchemes")
				refused(e.do("POST", "/v1/tenants/acme/delegations", alice, map[string]any{"agentId": "agt1", "capability": "review_pr", "task": "t", "context": nestedJSON(bound + 1)}), "context")
				// The ten thousand levels, and far more within the body limit, are
				// refused as fast.
				for _, depth := range []int{10_000, 200_000} {
					deep := strings.Repeat("[", depth) + strings.Repeat("]", depth)
					refused(e.do("POST", cardsPath, alice, `{"agentId":"agt4","name":"n","metadata":`+deep+`}`), "metadata")
					refused(e.do("PATCH", cardsPath+"/agt1", alice, `{"metadata":`+deep+`}`), "metadata")
				}

				// An agent's result posted to its callback URL is bounded too.
				a := agenttest.New(t, agenttest.Answer(http.StatusAccepted, `{}`))
				_, olga := e.delegationSetup("beta", "agt1", a.Endpoint())
				r := e.do("POST", "/v1/tenants/beta/delegations", olga, delegate("agt1", "async"))
				expect(t, r, http.StatusAccepted)
				d := decodeDelegation(t, r)
				got := waitCall(t, a, d.ID).Task
				callback := e.callbackPath(t, "beta", d.ID, got)
				refused(e.do("POST", callback, "", map[string]any{"status": "completed", "result": nestedJSON(bound + 1)}), "result")
				expect(t, e.do("POST", callback, "", map[string]any{"status": "completed", "result": nestedJSON(bound)}), http.StatusNoContent)

				// Nothing was written.
				if r := e.getCard("acme", "agt1"); string(r.body) != string(stored.body) {
					t.Fatalf("agt1 changed:\n%s\n%s", stored.body, r.body)
				}
				for _, id := range []string{"agt4", "agt5"} {
					expect(t, e.getCard("acme", id), http.StatusNotFound, "not_found")
				}
			})
		})
	}
}

// forEachDialectWith runs fn against a fresh server with options o on SQLite, Postgres and MySQL.
func forEachDialectWith(t *testing.T, o envOptions, fn func(t *testing.T, e *env)) {
	t.Helper()
	storagetest.ForEachDialect(t, func(t *testing.T, d string) { fn(t, newEnvWith(t, storagetest.Open(t, d), o)) })
}
