package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/web/webtest"
)

// hangingReceiver is a webhook subscriber whose first delivery hangs until released; after that
// it takes every event, keeping the subjects in the order they came.
type hangingReceiver struct {
	srv      *httptest.Server
	hung     chan struct{} // closed when the first delivery arrived
	release  chan struct{}
	hangOnce sync.Once

	mu       sync.Mutex
	subjects []string
}

func newHangingReceiver(t *testing.T) *hangingReceiver {
	r := &hangingReceiver{hung: make(chan struct{}), release: make(chan struct{})}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		first := false
		r.hangOnce.Do(func() { first = true })
		if first {
			close(r.hung)
			<-r.release
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		var ev struct{ Subject string }
		_ = json.Unmarshal(body, &ev)
		r.mu.Lock()
		r.subjects = append(r.subjects, ev.Subject)
		r.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(func() {
		select {
		case <-r.release:
		default:
			close(r.release)
		}
		r.srv.Close()
	})
	return r
}

func (r *hangingReceiver) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.subjects)
}

// TestKillHandsWebhooksOver kills (SIGKILL) the server that is delivering a webhook event, in the
// middle of the delivery, with more changes waiting; another server on the same database takes
// the subscription over once the killed one's lease lapses and delivers every change, the one in
// flight included, in order: none is lost.
func TestKillHandsWebhooksOver(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := binary(t)
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		env := crashEnv(t, dialect, "AGENTCARDS_OUTBOUND_ALLOW=127.0.0.1/32",
			"AGENTCARDS_WEBHOOKS_POLL_INTERVAL=100ms", "AGENTCARDS_WEBHOOKS_TIMEOUT=1s", "AGENTCARDS_WEBHOOKS_LEASE=2s")
		work := t.TempDir()
		rcv := newHangingReceiver(t)

		a, api, alice := crashTenant(t, bin, work, env)
		webtest.Expect(t, api.Do(t, "POST", "/v1/tenants/acme/webhooks", alice, map[string]any{"url": rcv.srv.URL}), http.StatusCreated)
		want := []string{"c0", "c1", "c2", "c3", "c4"}
		for _, id := range want {
			webtest.Expect(t, api.Do(t, "POST", "/v1/tenants/acme/cards", alice, map[string]any{"agentId": id, "name": id}), http.StatusCreated)
		}
		select {
		case <-rcv.hung:
		case <-time.After(30 * time.Second):
			t.Fatalf("no delivery began; server log:\n%s", a.log())
		}
		a.kill(t)
		close(rcv.release)

		b := startServer(t, bin, work, env)
		webtest.Eventually(t, 30*time.Second, "every change delivered after the kill", func() bool {
			return slices.Equal(slices.Compact(rcv.got()), want)
		})
		if got := rcv.got(); !slices.Equal(slices.Compact(got), want) {
			t.Errorf("received %q, want %q; server log:\n%s", got, want, b.log())
		}
	})
}
