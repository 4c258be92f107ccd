package gcpace_test

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/agentcards/agentcards/cmd/agentcards/app/gcpace"
)

func TestPercent(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		live, headroom uint64
		base, want     int
	}{
		{live: 100 * mib, headroom: 256 * mib, base: 100, want: 100}, // the runtime's pace allows less
		{live: 256 * mib, headroom: 256 * mib, base: 100, want: 100}, // exactly the headroom
		{live: 512 * mib, headroom: 256 * mib, base: 100, want: 50},
		{live: 700 * mib, headroom: 256 * mib, base: 100, want: 36},
		{live: 4096 * mib, headroom: 256 * mib, base: 100, want: gcpace.Floor}, // not below the floor
		{live: 700 * mib, headroom: 256 * mib, base: 30, want: 30},             // never above the base
		{live: 700 * mib, headroom: 256 * mib, base: 20, want: 20},             // a base below the floor kept
		{live: 700 * mib, headroom: 256 * mib, base: -1, want: -1},             // collections off
		{live: 0, headroom: 256 * mib, base: 100, want: 100},
	} {
		if got := gcpace.Percent(c.live, c.headroom, c.base); got != c.want {
			t.Errorf("Percent(%d MiB, %d MiB, %d) = %d, want %d", c.live/mib, c.headroom/mib, c.base, got, c.want)
		}
	}
}

// ballast is kept live while a test wants a large heap.
var ballast []byte

// TestPacer: with a live heap of 64 MiB, a Pacer of 24 MiB headroom sets the runtime's
// percentage to about 24/64 after a collection; once the heap is small again, back to what it
// was; Stop restores it.
func TestPacer(t *testing.T) {
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })
	ballast = nil
	runtime.GC() // Start paces by the last collection's figures: those of a small heap
	p := gcpace.Start(24 << 20)
	defer p.Stop()
	if got := runtimePercent(); got != 100 {
		t.Fatalf("a small heap: GOGC %d, want 100", got)
	}

	ballast = make([]byte, 64<<20)
	for i := 0; i < len(ballast); i += 4096 {
		ballast[i] = 1 // in the heap, not only reserved
	}
	// 24 MiB over ~64 MiB live (and the test binary's own heap): 30–37.
	settle(t, "a large heap", func(pct int) bool { return pct >= 30 && pct <= 37 })
	if p.Percent() != runtimePercent() {
		t.Errorf("Percent() %d, the runtime's %d", p.Percent(), runtimePercent())
	}

	ballast = nil
	settle(t, "the heap small again", func(pct int) bool { return pct == 100 })

	// A second Pacer shares the first (its headroom stays); the last Stop stops it.
	q := gcpace.Start(1 << 30)
	ballast = make([]byte, 64<<20)
	settle(t, "a large heap again, two Pacers", func(pct int) bool { return pct < 100 })
	p.Stop()
	p.Stop() // a second Stop of the same Pacer does nothing
	if got := runtimePercent(); got == 100 {
		t.Errorf("one of two Pacers stopped: GOGC %d, want it still paced", got)
	}
	q.Stop()
	if got := runtimePercent(); got != 100 {
		t.Errorf("after Stop: GOGC %d, want 100", got)
	}
	// A larger heap: a Pacer that went on after Stop would set the percentage again.
	ballast = make([]byte, 128<<20)
	for range 3 {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if got := runtimePercent(); got != 100 {
		t.Errorf("collections of a large heap after Stop: GOGC %d, want 100", got)
	}
	runtime.KeepAlive(ballast)
	ballast = nil
}

// settle runs collections until ok holds of the runtime's percentage (the Pacer sets it on the
// runtime's cleanup goroutine, after a collection).
func settle(t *testing.T, what string, ok func(int) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
		pct := runtimePercent()
		if ok(pct) {
			t.Logf("%s: GOGC %d", what, pct)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: GOGC %d", what, pct)
		}
	}
}

func runtimePercent() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}
