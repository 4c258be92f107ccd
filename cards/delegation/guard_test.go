package delegation

import (
	"fmt"
	"testing"
	"time"

	"github.com/agentcards/agentcards/web/webtest"
)

// TestBreakersBounded: breakers are kept for at most the configured number of endpoints, the least
// recently used going first, however many URLs are ever called; a breaker in use keeps its state.
func TestBreakersBounded(t *testing.T) {
	b := newBreakers(1, time.Minute, func(error) bool { return false }, 100, time.Hour)
	hot := b.get("acme", "https://hot.example/task")
	if _, err := hot.Execute(func() (Outcome, error) { return Outcome{}, errAgentFault }); err == nil {
		t.Fatal("the failing call did not fail")
	}
	for i := range 1000 {
		b.get("acme", fmt.Sprintf("https://agent%d.example/task", i))
		if i%50 == 0 {
			b.get("acme", "https://hot.example/task") // in use all along
		}
	}
	if n := b.recent.lru.Len(); n > 100 {
		t.Fatalf("%d breakers kept, want at most 100", n)
	}
	if again := b.get("acme", "https://hot.example/task"); again != hot || again.State().String() != "open" {
		t.Fatalf("the breaker in use was dropped or reset: state %s", again.State())
	}
	if first := b.get("acme", "https://agent0.example/task"); first.Counts().Requests != 0 {
		t.Fatal("an evicted breaker came back with its old counts")
	}
}

// TestGuardsDropIdleEntries: a breaker or a tenant's bucket unused for the idle time is dropped,
// and a later use starts afresh; each use starts the idle time again.
func TestGuardsDropIdleEntries(t *testing.T) {
	const idle = 50 * time.Millisecond
	b := newBreakers(1, time.Minute, func(error) bool { return false }, 100, idle)
	first := b.get("acme", "https://a.example/task")
	webtest.Eventually(t, 10*time.Second, "an idle breaker dropped", func() bool {
		return b.recent.lru.Len() == 0
	})
	if b.get("acme", "https://a.example/task") == first {
		t.Fatal("an idle breaker was kept")
	}
	l := newLimiters(0.001, 1, 100, idle)
	now := time.Now()
	if !l.allow("acme", now) || l.allow("acme", now) {
		t.Fatal("a burst of one allowed other than one call")
	}
	webtest.Eventually(t, 10*time.Second, "an idle bucket dropped", func() bool {
		return l.recent.lru.Len() == 0
	})
	if !l.allow("acme", now) {
		t.Fatal("a dropped bucket did not start full")
	}
}
