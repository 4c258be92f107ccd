package web_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync/atomic"
	"testing"

	"github.com/agentcards/agentcards/bench/cardgen"
	"github.com/agentcards/agentcards/storage/storagetest"
)

// BenchmarkCardWritesHTTP registers and patches cards through real HTTP with 16 concurrent
// tenant admins (SQLite, or the dialect named by AGENTCARDS_BENCH_DIALECT), in a tenant whose
// index a search loaded or in one never searched; for profiling the write path end to end
// (-cpuprofile).
func BenchmarkCardWritesHTTP(b *testing.B) {
	for _, mode := range []string{"none", "loaded"} {
		b.Run(mode, func(b *testing.B) { benchCardWrites(b, mode == "loaded") })
	}
}

func benchCardWrites(b *testing.B, loaded bool) {
	dialect := os.Getenv("AGENTCARDS_BENCH_DIALECT")
	if dialect == "" {
		dialect = "sqlite"
	}
	e := newEnvWith(b, storagetest.Open(b, dialect), envOptions{follow: true})
	e.mkTenant("acme", "alice")
	alice := e.token("alice", "acme", false)
	if loaded {
		// 2,000 cards, as orchestrators' tenants hold, then a search loads the index.
		seed := cardgen.Documents(42, 2000)
		for i := 0; i < len(seed); i += 250 {
			body := append([]byte("["), bytes.Join(seed[i:i+250], []byte(","))...)
			body = append(body, ']')
			r := e.do("POST", "/v1/tenants/acme/cards:batch", alice, json.RawMessage(body))
			expect(b, r, http.StatusCreated)
		}
		expect(b, e.do("GET", "/v1/tenants/acme/cards?q=review", alice, nil), http.StatusOK)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: 64, MaxIdleConnsPerHost: 64}}
	b.Cleanup(client.CloseIdleConnections)
	send := func(method, path string, body []byte, want int, headers ...string) (string, error) {
		req, err := http.NewRequest(method, e.srv.URL+path, bytes.NewReader(body))
		if err != nil {
			return "", err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+alice)
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		res, err := client.Do(req)
		if err != nil {
			return "", err
		}
		defer res.Body.Close()
		out, _ := io.ReadAll(res.Body)
		if res.StatusCode != want {
			return "", fmt.Errorf("%s %s: status %d: %s", method, path, res.StatusCode, out)
		}
		return res.Header.Get("ETag"), nil
	}
	// Generated cards (bench/cardgen): 5-20 capabilities, ~300-character descriptions.
	docs := cardgen.Documents(7, b.N+1) // agent-0000001...: seed 7 makes other cards than seed 42
	for i := range docs {
		docs[i] = bytes.Replace(docs[i], []byte(`"agent-`), []byte(`"w-agent-`), 1)
	}
	var n atomic.Int64
	write := func() error {
		i := int(n.Add(1))
		card, id := docs[i], "w-"+cardgen.Make(7, i).AgentID
		etag, err := send("POST", "/v1/tenants/acme/cards", card, http.StatusCreated)
		if err != nil {
			return err
		}
		_, err = send("PATCH", "/v1/tenants/acme/cards/"+id, []byte(`{"description": "Reviews pull requests, edited"}`), http.StatusOK,
			"Content-Type", "application/merge-patch+json", "If-Match", etag)
		return err
	}
	b.ResetTimer()
	elapsed, _ := concurrently(b, b.N, write)
	b.StopTimer()
	b.ReportMetric(float64(2*b.N)/elapsed.Seconds(), "writes/s")
}
