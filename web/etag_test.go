package web_test

import (
	"net/http"
	"testing"

	"github.com/agentcards/agentcards/storage/storagetest"
)

// TestIfNoneMatchWeakComparison: If-None-Match compares weakly (RFC 9110 §13.1.2), on the card
// and on its A2A rendering alike: the current tag, with or without W/, in a list or as "*", is a
// 304; any other tag is the full answer.
func TestIfNoneMatchWeakComparison(t *testing.T) {
	e := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	e.mkTenant("acme", "alice")
	alice := e.token("alice", "acme", false)
	card := sampleCard("agt1")
	expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, card), http.StatusCreated)
	for _, path := range []string{"/v1/tenants/acme/cards/agt1", "/a2a/acme/agt1/.well-known/agent-card.json"} {
		tag := e.do("GET", path, alice, nil).header.Get("ETag")
		if tag == "" {
			t.Fatalf("%s: no ETag", path)
		}
		for inm, want := range map[string]int{
			tag:                 http.StatusNotModified,
			"W/" + tag:          http.StatusNotModified,
			`"other", ` + tag:   http.StatusNotModified,
			"*":                 http.StatusNotModified,
			`"other"`:           http.StatusOK,
			`W/"other", "nope"`: http.StatusOK,
		} {
			if r := e.do("GET", path, alice, nil, "If-None-Match", inm); r.status != want {
				t.Errorf("%s with If-None-Match %s: %d, want %d", path, inm, r.status, want)
			}
		}
	}
}
