package delegation

import (
	"fmt"
	"testing"
	"time"

	"github.com/sony/gobreaker/v2"
)

// fail runs one failing call through cb.
func fail(t *testing.T, cb *gobreaker.CircuitBreaker[Outcome]) {
	t.Helper()
	if _, err := cb.Execute(func() (Outcome, error) { return Outcome{}, errAgentFault }); err == nil {
		t.Fatal("the failing call did not fail")
	}
}

// TestBreakersBounded: breakers are kept for at most the configured number of endpoints, the least
// recently used going first, however many URLs are ever called; a breaker in use keeps its state,
// and one that was evicted comes back new.
func TestBreakersBounded(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b := newBreakers(1, time.Minute, func(error) bool { return false }, 100, time.Hour)
	hot := b.get("acme", "https://hot.example/task", now)
	fail(t, hot)
	evicted := b.get("acme", "https://first.example/task", now)
	fail(t, evicted)
	for i := range 1000 {
		b.get("acme", fmt.Sprintf("https://agent%d.example/task", i), now)
		if i%50 == 0 {
			b.get("acme", "https://hot.example/task", now) // in use all along
		}
	}
	if n := b.recent.lru.Len(); n > 100 {
		t.Fatalf("%d breakers kept, want at most 100", n)
	}
	if again := b.get("acme", "https://hot.example/task", now); again != hot || again.State() != gobreaker.StateOpen {
		t.Fatalf("the breaker in use was dropped or reset: state %s", again.State())
	}
	if again := b.get("acme", "https://first.example/task", now); again == evicted || again.State() != gobreaker.StateClosed {
		t.Fatalf("the evicted breaker came back as it was: state %s", again.State())
	}
}

// TestGuardsStartAfreshWhenIdle: a breaker or a tenant's bucket unused for longer than the idle
// time is new on its next use; each use starts the idle time again. Time is the dispatcher's
// clock, here a fake one.
func TestGuardsStartAfreshWhenIdle(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const idle = time.Hour
	b := newBreakers(1, time.Minute, func(error) bool { return false }, 100, idle)
	first := b.get("acme", "https://a.example/task", t0)
	fail(t, first)
	if b.get("acme", "https://a.example/task", t0.Add(idle-time.Second)) != first {
		t.Fatal("a breaker used within the idle time was replaced")
	}
	// Used just now (t0+idle-1s): still the same at t0+2*idle-2s.
	if b.get("acme", "https://a.example/task", t0.Add(2*idle-2*time.Second)) != first {
		t.Fatal("a use did not start the idle time again")
	}
	if again := b.get("acme", "https://a.example/task", t0.Add(3*idle)); again == first || again.State() != gobreaker.StateClosed {
		t.Fatal("an idle breaker was kept")
	}

	l := newLimiters(0.0001, 1, 100, idle) // a token every 10,000 s: no refill explains a full bucket
	if !l.allow("acme", t0) || l.allow("acme", t0) {
		t.Fatal("a burst of one allowed other than one call")
	}
	if l.allow("acme", t0.Add(time.Minute)) {
		t.Fatal("the bucket refilled within a minute")
	}
	if !l.allow("acme", t0.Add(time.Minute+idle+time.Second)) {
		t.Fatal("an idle tenant's bucket did not start full")
	}
}
