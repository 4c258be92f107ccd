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

	"github.com/golang-jwt/jwt/v5"

	"github.com/agentcards/agentcards/authz/token"
	"github.com/agentcards/agentcards/cards/agenttest"
	"github.com/agentcards/agentcards/cards/delegation"
	"github.com/agentcards/agentcards/storage"
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
	a := agenttest.New(b, agenttest.Answer(http.StatusOK, `{"result": "ok"}`))
	_, olga := e.delegationSetup("acme", "agt1", a.Endpoint())
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
	fwd := forwarder{endpoint: a.Endpoint(), client: &http.Client{Transport: &http.Transport{MaxIdleConns: 64, MaxIdleConnsPerHost: 64}}}
	relay := fwd.relay(b)
	b.Cleanup(fwd.client.CloseIdleConnections)
	b.Cleanup(client.CloseIdleConnections)
	recording := fwd.recording(b, e)
	direct := func() error { return post(a.Endpoint(), "", task, http.StatusOK) }
	relayed := func() error { return post(relay.URL, "", task, http.StatusOK) }
	floor := func() error { return post(recording.URL, "", task, http.StatusOK) }
	via := func() error { return post(e.srv.URL+"/v1/tenants/acme/delegations", olga, deleg, http.StatusOK) }
	// Warm both paths (connections, the enforcer, SQLite's cache).
	for i := 0; i < 20; i++ {
		for _, f := range []func() error{direct, via, relayed, floor} {
			if err := f(); err != nil {
				b.Fatal(err)
			}
		}
	}
	reportOverhead(b, direct, relayed, via, floor)
}

// forwarder sends a call on to the agent at endpoint through client, as a server in the middle
// does.
type forwarder struct {
	endpoint string
	client   *http.Client
}

// call sends body on to the agent, with authorization if set, and returns its answer.
func (f forwarder) call(r *http.Request, body []byte, authorization string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(r.Context(), "POST", f.endpoint, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	res, err := f.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	return res.StatusCode, out, err
}

// answer writes the agent's answer back to the caller.
func (forwarder) answer(w http.ResponseWriter, status int, out []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(out)
}

// relay is the least any delegating server must do: take the request and send it on to the
// agent, with no checks, no records and no signature. Its ratio to the direct call is the
// ceiling of this machine for a server in the middle.
func (f forwarder) relay(b *testing.B) *httptest.Server {
	relay := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		status, out, err := f.call(r, body, "")
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		f.answer(w, status, out)
	}))
	b.Cleanup(relay.Close)
	return relay
}

// recording is a relay that also does what no delegation here can skip: it signs a delegation
// token with the server's key, writes the record through the server's store before the call (so
// that a kill -9 cannot lose a delegation that reached the agent) and its outcome after, each
// with its audit entry. Its ratio to the relay is the ceiling for any server that keeps those
// promises on this machine and database; the rest of the delegated call's cost (authentication,
// policy, the card, validation, metrics) is the server's own.
func (f forwarder) recording(b *testing.B, e *env) *httptest.Server {
	records := storage.NewDelegationStore(e.db)
	var recorded atomic.Int64
	recording := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		now := time.Now().UTC().Truncate(time.Microsecond)
		d := delegation.Delegation{ID: fmt.Sprintf("floor-%08d", recorded.Add(1)), Caller: "olga", AgentID: "agt1",
			Capability: "review_pr", Mode: delegation.ModeSync, Transport: delegation.TransportHTTP, Depth: 1,
			Status: delegation.StatusRunning, CreatedAt: now, UpdatedAt: now, Deadline: now.Add(30 * time.Second),
			Task: "Review PR 12 of acme/web"}
		tok, err := e.keys.SignJWT(token.DelegationClaims{
			RegisteredClaims: jwt.RegisteredClaims{Issuer: "agentcards", Subject: d.AgentID, Audience: jwt.ClaimStrings{f.endpoint},
				IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(time.Minute)), ID: d.ID},
			Tenant: "acme", Caller: d.Caller, Capability: d.Capability, DelegationID: d.ID, Depth: d.Depth,
		})
		if err == nil {
			err = records.Create(r.Context(), "acme", d, "")
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		status, out, err := f.call(r, body, "Bearer "+tok)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		err = records.Update(r.Context(), "acme", d.ID, []delegation.Status{delegation.StatusRunning},
			delegation.Outcome{Status: delegation.StatusCompleted, Result: out, At: time.Now(), LatencyMS: 1})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		f.answer(w, status, out)
	}))
	b.Cleanup(recording.Close)
	return recording
}

// reportOverhead times b.N calls of each way to the agent (direct, through the relay, through
// the server, through the recording relay) and reports their ratios, latencies and CPU times.
func reportOverhead(b *testing.B, direct, relayed, via, floor func() error) {
	b.ResetTimer()
	dTime, dLat := concurrently(b, b.N, direct)
	c0, cpuOK := processCPU()
	rTime, _ := concurrently(b, b.N, relayed)
	c1, _ := processCPU()
	vTime, vLat := concurrently(b, b.N, via)
	c2, _ := processCPU()
	fTime, _ := concurrently(b, b.N, floor)
	c3, _ := processCPU()
	b.StopTimer()
	if cpuOK {
		// The CPU time of the whole process (callers, server, agent) per call: on a machine
		// that other work shares, it moves much less than the wall-clock throughput does.
		b.ReportMetric(float64(c1-c0)/1e3/float64(b.N), "relay-cpu-µs/op")
		b.ReportMetric(float64(c2-c1)/1e3/float64(b.N), "delegated-cpu-µs/op")
		b.ReportMetric(float64(c1-c0)/float64(c2-c1), "cpu-of-relay")
		b.ReportMetric(float64(c3-c2)/1e3/float64(b.N), "recording-cpu-µs/op")
		b.ReportMetric(float64(c1-c0)/float64(c3-c2), "recording-cpu-of-relay")
	}
	b.ReportMetric(dTime.Seconds()/vTime.Seconds(), "throughput-ratio")
	b.ReportMetric(dTime.Seconds()/rTime.Seconds(), "relay-ratio")
	b.ReportMetric(rTime.Seconds()/vTime.Seconds(), "of-relay")
	b.ReportMetric(rTime.Seconds()/fTime.Seconds(), "recording-of-relay")
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
