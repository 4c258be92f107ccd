package web_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/agentcards/agentcards/bench/cardgen"
	"github.com/agentcards/agentcards/storage/storagetest"
)

// BenchmarkMetricsOverhead: the same search (a capability filter, limit 10, 2,000 cards, SQLite)
// over real HTTP from a server without metrics and one with them on (every request timed by
// route, the search by shape), side by side; their ns/op ratio is what metrics cost.
func BenchmarkMetricsOverhead(b *testing.B) {
	for _, on := range []bool{false, true} {
		e := newEnvWith(b, storagetest.Open(b, "sqlite"), envOptions{metrics: on})
		e.mkTenant("bench", "bench")
		tok := e.token("bench", "bench", false)
		for _, doc := range cardgen.Documents(42, 2000) {
			expect(b, e.do("POST", "/v1/tenants/bench/cards", tok, doc), http.StatusCreated)
		}
		search := e.srv.URL + "/v1/tenants/bench/cards?limit=10&capability=" + url.QueryEscape(cardgen.Make(42, 1000).Capabilities[0].Name)
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) { getInParallel(b, e, search, tok) })
	}
}
