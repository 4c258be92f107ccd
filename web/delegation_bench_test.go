package web_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentcards/agentcards/storage/storagetest"
)

// benchCallers is the number of concurrent callers the issue asks for.
const benchCallers = 16

// BenchmarkDelegationOverhead sends b.N tasks straight to a loopback agent that answers at once,
// then b.N through POST /delegations (sync; SQLite, or the dialect named by
// AGENTCARDS_BENCH_DIALECT), each with 16 concurrent callers, in the same
// run. It reports the throughput ratio (delegated / direct) and the latency the server adds at
// p50 and p99; absolute figures depend on the machine, the ratios much less. Where the CPU time
// can be read, it also reports the CPU time of a relayed and of a delegated call and their ratio
// (cpu-of-relay), which other work on the machine disturbs less than the wall-clock ratios.
func BenchmarkDelegationOverhead(b *testing.B) {
	dialect := os.Getenv("AGENTCARDS_BENCH_DIALECT")
	if dialect == "" {
		dialect = "sqlite"
	}
	e := newEnvWith(b, storagetest.Open(b, dialect), envOptions{allowLoopback: true})
	a := newAgent(b, reply(http.StatusOK, `{"result": "ok"}`))
	_, olga := e.delegationSetup("acme", "agt1", a.endpoint())
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: 64, MaxIdleConnsPerHost: 64}}
	post := func(url, token string, body []byte, want int) error {
		req, err := http.NewRequest("POST", url, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := client.Do(req)
		if err != nil {
			return err
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != want || want == http.StatusOK && !bytes.Contains(b, []byte(`"completed"`)) && token != "" {
			return fmt.Errorf("status %d: %s", res.StatusCode, b)
		}
		return nil
	}
	task := []byte(`{"delegationId": "d", "task": "Review PR 12 of acme/web"}`)
	deleg := []byte(`{"agentId": "agt1", "capability": "review_pr", "task": "Review PR 12 of acme/web", "mode": "sync"}`)
	// relay is the least any delegating server must do: take the request and send it on to the
	// agent, with no checks, no records and no signature. Its ratio to the direct call is the
	// ceiling of this machine for a server in the middle.
	relayClient := &http.Client{Transport: &http.Transport{MaxIdleConns: 64, MaxIdleConnsPerHost: 64}}
	relay := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		res, err := relayClient.Post(a.endpoint(), "application/json", bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer res.Body.Close()
		out, _ := io.ReadAll(res.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(res.StatusCode)
		_, _ = w.Write(out)
	}))
	b.Cleanup(relay.Close)
	b.Cleanup(relayClient.CloseIdleConnections)
	b.Cleanup(client.CloseIdleConnections)
	direct := func() error { return post(a.endpoint(), "", task, http.StatusOK) }
	relayed := func() error { return post(relay.URL, "", task, http.StatusOK) }
	via := func() error { return post(e.srv.URL+"/v1/tenants/acme/delegations", olga, deleg, http.StatusOK) }
	// Warm both paths (connections, the enforcer, SQLite's cache).
	for i := 0; i < 20; i++ {
		if err := direct(); err != nil {
			b.Fatal(err)
		}
		if err := via(); err != nil {
			b.Fatal(err)
		}
		if err := relayed(); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	dTime, dLat := concurrently(b, b.N, direct)
	c0, cpuOK := processCPU()
	rTime, _ := concurrently(b, b.N, relayed)
	c1, _ := processCPU()
	vTime, vLat := concurrently(b, b.N, via)
	c2, _ := processCPU()
	b.StopTimer()
	if cpuOK {
		// The CPU time of the whole process (callers, server, agent) per call: on a machine
		// that other work shares, it moves much less than the wall-clock throughput does.
		b.ReportMetric(float64(c1-c0)/1e3/float64(b.N), "relay-cpu-µs/op")
		b.ReportMetric(float64(c2-c1)/1e3/float64(b.N), "delegated-cpu-µs/op")
		b.ReportMetric(float64(c1-c0)/float64(c2-c1), "cpu-of-relay")
	}
	b.ReportMetric(dTime.Seconds()/vTime.Seconds(), "throughput-ratio")
	b.ReportMetric(dTime.Seconds()/rTime.Seconds(), "relay-ratio")
	b.ReportMetric(rTime.Seconds()/vTime.Seconds(), "of-relay")
	b.ReportMetric(float64(b.N)/dTime.Seconds(), "direct-ops/s")
	b.ReportMetric(float64(b.N)/vTime.Seconds(), "delegated-ops/s")
	b.ReportMetric(float64(percentile(vLat, 50)-percentile(dLat, 50))/1e3, "p50-added-µs")
	b.ReportMetric(float64(percentile(vLat, 99)-percentile(dLat, 99))/1e3, "p99-added-µs")
}

// concurrently runs n calls of f on benchCallers goroutines; it returns the wall time and each
// call's latency.
func concurrently(b *testing.B, n int, f func() error) (time.Duration, []time.Duration) {
	lat := make([]time.Duration, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	start := time.Now()
	for w := 0; w < benchCallers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				t0 := time.Now()
				if err := f(); err != nil {
					failed.Store(err)
					return
				}
				lat[i] = time.Since(t0)
			}
		}()
	}
	wg.Wait()
	if err, ok := failed.Load().(error); ok {
		b.Fatal(err)
	}
	return time.Since(start), lat
}

// percentile returns the p-th percentile of lat (nearest rank).
func percentile(lat []time.Duration, p int) time.Duration {
	s := slices.Clone(lat)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	i := (len(s)*p + 99) / 100
	return s[max(i-1, 0)]
}
