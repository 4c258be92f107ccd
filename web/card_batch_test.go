package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/agentcards/agentcards/cards"
)

// TestCardBatch: POST .../cards:batch registers every card of the array at once, searchable at
// once; a batch with one bad card (malformed, invalid, repeated, already registered, not the
// caller's to write) stores none and names the card by its index; bounds and types are checked.
func TestCardBatch(t *testing.T) {
	forEachDialectAndIndex(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		alice := e.token("alice", "acme", false)
		batchesRegistered(t, e, alice)

		reader := e.token("rita", "acme", false)
		expect(t, e.do("POST", "/v1/tenants/acme/roles", alice, map[string]any{"subject": "rita", "role": "reader"}), http.StatusCreated)
		for _, c := range refusedBatches(alice, reader) {
			t.Run(c.name, func(t *testing.T) {
				r := e.do("POST", "/v1/tenants/acme/cards:batch", c.token, c.body)
				expect(t, r, c.status, c.code)
				var body struct{ Error struct{ Message string } }
				if r.json(t, &body); !strings.HasPrefix(body.Error.Message, c.msg) {
					t.Errorf("message %q, want it to start with %q", body.Error.Message, c.msg)
				}
			})
		}
		// Nothing of the refused batches was stored.
		var page struct{ Total int }
		e.do("GET", "/v1/tenants/acme/cards", alice, nil).json(t, &page)
		if page.Total != 4 {
			t.Fatalf("after refused batches: %d cards, want 4", page.Total)
		}
		expect(t, e.do("GET", "/v1/tenants/acme/cards/c1", alice, nil), http.StatusNotFound)
	})
}

// sampleBatch is a batch of the sample cards of ids.
func sampleBatch(ids ...string) []any {
	var out []any
	for _, id := range ids {
		out = append(out, sampleCard(id))
	}
	return out
}

// batchesRegistered registers the cards b1 to b3 in one batch and b4 in another, as alice of
// acme: each answered as encoding/json writes it, the first searchable at once.
func batchesRegistered(t *testing.T, e *env, alice string) {
	// The index is loaded first, so the batch must reach it before the answer.
	expect(t, e.do("GET", "/v1/tenants/acme/cards", alice, nil), http.StatusOK)
	r := e.do("POST", "/v1/tenants/acme/cards:batch", alice, sampleBatch("b1", "b2", "b3"))
	expect(t, r, http.StatusCreated)
	var created struct {
		Items []struct {
			AgentID  string `json:"agentId"`
			Revision int64  `json:"revision"`
		}
		Total int
	}
	r.json(t, &created)
	if created.Total != 3 || created.Items[2].AgentID != "b3" || created.Items[2].Revision != 1 {
		t.Fatalf("created %+v", created)
	}
	// The answer is written as encoding/json writes it, byte for byte.
	var answered struct {
		Items []cards.Card `json:"items"`
		Total int          `json:"total"`
	}
	r.json(t, &answered)
	if std, err := json.Marshal(map[string]any{"items": answered.Items, "total": answered.Total}); err != nil ||
		string(append(std, '\n')) != string(r.body) {
		t.Fatalf("the batch's answer is not encoding/json's (%v):\n%s\n%s", err, r.body, std)
	}
	var page struct{ Total int }
	e.do("GET", "/v1/tenants/acme/cards?tag=github", alice, nil).json(t, &page)
	if page.Total != 3 {
		t.Fatalf("search right after the batch: %d cards, want 3", page.Total)
	}
	// A smaller batch after it: its body and answer buffers (reused, see batchBodies) hold
	// nothing of the one before.
	r = e.do("POST", "/v1/tenants/acme/cards:batch", alice, sampleBatch("b4"))
	expect(t, r, http.StatusCreated)
	r.json(t, &answered)
	if std, err := json.Marshal(map[string]any{"items": answered.Items, "total": answered.Total}); err != nil ||
		string(append(std, '\n')) != string(r.body) || answered.Total != 1 || answered.Items[0].AgentID != "b4" {
		t.Fatalf("the second batch's answer (%v):\n%s\n%s", err, r.body, std)
	}
}

// refusedBatch is a batch the server refuses: sent with token, answered status with the error
// code, its message starting with msg.
type refusedBatch struct {
	name, token string
	body        any
	status      int
	code, msg   string
}

// refusedBatches are the batches TestCardBatch sends to be refused, with b1 to b4 registered,
// as alice (the tenant's admin) or the reader.
func refusedBatches(alice, reader string) []refusedBatch {
	bad := sampleBatch("c1", "c2", "c3")
	bad[1].(map[string]any)["endpoint"] = "not a url"
	// A large batch is decoded by several goroutines: the card named is still the first bad one.
	large := sampleBatch(manyIDs(600)...)
	large[300].(map[string]any)["endpoint"] = "not a url"
	large[450].(map[string]any)["name"] = 5
	repeated := sampleBatch(manyIDs(600)...)
	repeated[200] = sampleCard("m100")
	repeated[500].(map[string]any)["endpoint"] = "not a url"
	return []refusedBatch{
		{"invalid card", alice, bad, 400, "invalid", "cards[1]: "},
		{"repeated agent", alice, sampleBatch("c1", "c2", "c1"), 400, "invalid", `cards[2]: agentId "c1" is also cards[0]`},
		{"registered already", alice, sampleBatch("c1", "b2"), 409, "conflict", `cards[1]: card "b2" already exists`},
		{"malformed card", alice, []any{sampleCard("c1"), "x"}, 400, "malformed_json", "cards[1]: "},
		{"not an array", alice, sampleCard("c1"), 400, "malformed_json", "the body must be a JSON array"},
		{"cut short", alice, `[{"agentId": "c1"}`, 400, "malformed_json", "the body must be a JSON array"},
		{"malformed inside a card", alice, `[{"agentId": "c1", "name": tru}]`, 400, "malformed_json", "the body must be a JSON array"},
		{"malformed after an invalid card", alice, `[{"agentId": "c1", "name": "n", "endpoint": "x"}, {"agentId": }]`, 400, "malformed_json", "the body must be a JSON array"},
		{"data after the array", alice, `[] []`, 400, "malformed_json", "the body must be a JSON array"},
		{"null", alice, `null`, 400, "malformed_json", "the body must be a JSON array"},
		{"empty", alice, []any{}, 400, "invalid", "a batch holds 1 to 1000 cards, not 0"},
		{"too many", alice, sampleBatch(manyIDs(1001)...), 400, "invalid", "a batch holds 1 to 1000 cards, not 1001"},
		{"reader", reader, sampleBatch("c1"), 403, "forbidden", "cards[0]: "},
		{"large, two bad cards", alice, large, 400, "invalid", "cards[300]: "},
		{"large, repeated before an invalid card", alice, repeated, 400, "invalid", `cards[200]: agentId "m100" is also cards[100]`},
	}
}

func manyIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("m%d", i)
	}
	return ids
}
