package web_test

import (
	"io"
	"net/http"
	"net/url"
	"testing"

	"github.com/agentcards/agentcards/bench/cardgen"
	"github.com/agentcards/agentcards/storage/storagetest"
)

// BenchmarkSearchHTTP serves the search endpoint (limit=10, a capability filter) and /health
// from the same server over real HTTP; compare their ns/op for the throughput ratio.
func BenchmarkSearchHTTP(b *testing.B) {
	e := newEnv(b, storagetest.Open(b, "sqlite"), 1<<20)
	e.mkTenant("bench", "bench")
	tok := e.token("bench", "bench", false)
	for _, doc := range cardgen.Documents(42, 2000) {
		expect(b, e.do("POST", "/v1/tenants/bench/cards", tok, doc), http.StatusCreated)
	}
	search := e.srv.URL + "/v1/tenants/bench/cards?limit=10&capability=" + url.QueryEscape(cardgen.Make(42, 1000).Capabilities[0].Name)
	for _, c := range []struct{ name, url string }{{"health", e.srv.URL + "/health"}, {"search", search}} {
		b.Run(c.name, func(b *testing.B) { getInParallel(b, e, c.url, tok) })
	}
}

// getInParallel GETs url with the bearer token from parallel clients until the benchmark ends,
// failing on any answer but 200.
func getInParallel(b *testing.B, e *env, url, tok string) {
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, _ := http.NewRequest("GET", url, nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			res, err := e.srv.Client().Do(req)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode != 200 {
				b.Fatal(res.StatusCode)
			}
		}
	})
}
