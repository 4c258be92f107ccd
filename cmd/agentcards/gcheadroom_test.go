package main

import (
	"testing"
	"time"

	"github.com/agentcards/agentcards/cmd/agentcards/app/gcpace"
	"github.com/agentcards/agentcards/web/webtest"
)

// TestServeGCHeadroom: serve wires server.gcHeadroom to the pacer (gcpace's own tests cover the
// pacing itself). With a headroom of one byte, every live heap is past it, so the runtime's GC
// percentage is the floor (go_gc_gogc_percent) from the start; GOGC in the environment keeps
// the runtime's pace, and so does a headroom of 0. Each case reads the percentage after two
// collections, by which a running pacer would have set it.
func TestServeGCHeadroom(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := binary(t)
	for _, c := range []struct {
		name string
		env  []string
		want float64
	}{
		{"headroom 1", []string{"AGENTCARDS_SERVER_GC_HEADROOM=1"}, gcpace.Floor},
		{"headroom 1, GOGC=100", []string{"AGENTCARDS_SERVER_GC_HEADROOM=1", "GOGC=100"}, 100},
		{"headroom 0", []string{"AGENTCARDS_SERVER_GC_HEADROOM=0"}, 100},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := append(cleanEnv(), "GOGC=", "AGENTCARDS_SERVER_ADDR=127.0.0.1:0", "AGENTCARDS_SERVER_METRICS_ADDR=127.0.0.1:0")
			srv := startServer(t, bin, t.TempDir(), append(env, c.env...))
			var base string
			select {
			case base = <-srv.metrics:
			case <-time.After(30 * time.Second):
				t.Fatalf("no metrics address printed; stderr:\n%s", srv.log())
			}
			// The scrapes make garbage; wait for two collections after the first one seen.
			var first, pct float64
			webtest.Eventually(t, 30*time.Second, "two collections", func() bool {
				families := scrapeMetrics(t, base)
				last, _ := metricSample(families, "go_memstats_last_gc_time_seconds", nil)
				pct, _ = metricSample(families, "go_gc_gogc_percent", nil)
				if first == 0 {
					first = last
				}
				return first > 0 && last > first && pct == c.want
			})
			t.Logf("go_gc_gogc_percent %v", pct)
		})
	}
}
