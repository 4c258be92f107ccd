package web_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

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

// BenchmarkSearchLatency times free-text searches as bench/meshdiscover sends them (1 to 3 words
// of the cards' vocabulary, limit 10, a platform admin's token) over 10k SQLite cards, one
// request at a time over real HTTP, beside GET /health on the same server, and reports each one's
// p50, p90 and p99. Every query runs once before the timing, so the cards answered are encoded
// and cached already: a card's first answer reads it from the database (bench/meshdiscover
// -detail shows that cost).
func BenchmarkSearchLatency(b *testing.B) {
	e := newEnvWith(b, storagetest.Open(b, "sqlite"), envOptions{bodyLimit: 8 << 20})
	e.mkTenant("bench", "bench")
	tok := e.admin()
	docs := cardgen.Documents(42, 10_000)
	for len(docs) > 0 {
		n := min(len(docs), 1000)
		batch := make([]json.RawMessage, n)
		for i, d := range docs[:n] {
			batch[i] = d
		}
		expect(b, e.do("POST", "/v1/tenants/bench/cards:batch", tok, batch), http.StatusCreated)
		docs = docs[n:]
	}
	var searches []string
	for _, q := range cardgen.Queries(42, 150) {
		searches = append(searches, e.srv.URL+"/v1/tenants/bench/cards?limit=10&q="+url.QueryEscape(q))
	}
	client := e.srv.Client()
	get := func(b *testing.B, u string) time.Duration {
		req, _ := http.NewRequest("GET", u, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		t0 := time.Now()
		res, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		d := time.Since(t0)
		if res.StatusCode != 200 {
			b.Fatal(res.StatusCode)
		}
		return d
	}
	for _, u := range searches {
		get(b, u)
	}
	for _, c := range []struct {
		name string
		urls []string
	}{{"health", []string{e.srv.URL + "/health"}}, {"search", searches}} {
		b.Run(c.name, func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			for i := range b.N {
				lat = append(lat, get(b, c.urls[i%len(c.urls)]))
			}
			slices.Sort(lat)
			for _, p := range []struct {
				name string
				f    float64
			}{{"p50-µs", 0.50}, {"p90-µs", 0.90}, {"p99-µs", 0.99}} {
				b.ReportMetric(float64(lat[int(float64(len(lat))*p.f)].Microseconds()), p.name)
			}
		})
	}
}
