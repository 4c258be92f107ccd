package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/agentcards/agentcards/bench/internal/proc"
)

// sample is what one interval measured: the server's state at its end (from /metrics), and the
// clients' requests during it. A value that could not be read is NaN.
type sample struct {
	t time.Duration // since the load started
	// the server's, at the end of the interval
	rss, heap, goroutines, fds, indexBytes, indexCards float64
	// cachedBytes and cachedCards are the encoded cards the indexes keep (bounded per tenant).
	cachedBytes, cachedCards float64
	// goHeld is the memory the Go runtime holds from the system (go_memstats_sys_bytes less
	// what it released): rss less it is outside Go, SQLite's caches and C allocations.
	goHeld float64
	// idle is the heap memory the runtime holds free and has not yet returned to the system
	// (heap_idle less heap_released); goal is the heap size at which the next GC starts.
	idle, goal float64
	// server5xx is how many answers the server counted 5xx in the interval.
	server5xx float64
	// the clients' in the interval: requests answered as expected per second, their p50 and p99
	// in ms, failures and expected refusals.
	rate, p50, p99, errs, refused float64
	// load is the machine's 1-minute load average: work beside the run's (other tests on a
	// shared machine) slows it down as much as anything the server does.
	load float64
}

// Metric names, as the Go and process collectors of client_golang and cmd/agentcards/app/metrics expose them.
const (
	metricRSS         = "process_resident_memory_bytes"
	metricFDs         = "process_open_fds"
	metricGoroutines  = "go_goroutines"
	metricHeap        = "go_memstats_heap_inuse_bytes"
	metricGoSys       = "go_memstats_sys_bytes"
	metricReleased    = "go_memstats_heap_released_bytes"
	metricIdle        = "go_memstats_heap_idle_bytes"
	metricNextGC      = "go_memstats_next_gc_bytes"
	metricIndexBytes  = "agentcards_index_bytes"
	metricIndexCards  = "agentcards_index_cards"
	metricCachedBytes = "agentcards_index_cached_bytes"
	metricCachedCards = "agentcards_index_cached_cards"
	metricRequests    = "agentcards_http_request_duration_seconds"
)

// scraper reads the server's /metrics; pid is the server's, for /proc when a process metric is
// missing.
type scraper struct {
	client  *http.Client
	url     string
	pid     int
	last5xx float64
	seen5xx bool
	warned  map[string]bool
	// pprof is the server's /debug/pprof/ URL; empty when no profiles are taken.
	pprof string
}

// profile takes a CPU profile of the server over d, then a heap profile, into dir as
// cpu-<name>.pprof and heap-<name>.pprof; it says what failed on stderr.
func (sc *scraper) profile(dir, name string, d time.Duration) {
	for _, p := range []struct{ kind, query string }{
		{"cpu", fmt.Sprintf("profile?seconds=%d", int(d.Seconds()))},
		{"heap", "heap"},
	} {
		path := filepath.Join(dir, p.kind+"-"+name+".pprof")
		if err := proc.Fetch(sc.pprof+p.query, path, d+time.Minute); err != nil {
			progress("profile %s: %v", path, err)
			return
		}
		progress("profile %s written", path)
	}
}

// scrape reads the server's metrics into s (all but the clients' fields).
func (sc *scraper) scrape(s *sample) error {
	s.rss, s.heap, s.goroutines, s.fds, s.indexBytes, s.indexCards, s.server5xx = nan(), nan(), nan(), nan(), nan(), nan(), nan()
	s.cachedBytes, s.cachedCards, s.idle, s.goal = nan(), nan(), nan(), nan()
	s.goHeld = nan()
	s.load = loadAverage()
	fams, err := sc.families()
	if err == nil {
		s.rss = sc.value(fams, metricRSS)
		s.heap = sc.value(fams, metricHeap)
		s.goHeld = sc.value(fams, metricGoSys) - sc.value(fams, metricReleased)
		s.idle = sc.value(fams, metricIdle) - sc.value(fams, metricReleased)
		s.goal = sc.value(fams, metricNextGC)
		s.goroutines = sc.value(fams, metricGoroutines)
		s.fds = sc.value(fams, metricFDs)
		// No index family yet: no tenant's index is loaded (before the first search).
		s.indexBytes = sc.quiet(fams, metricIndexBytes)
		s.indexCards = sc.quiet(fams, metricIndexCards)
		s.cachedBytes = sc.quiet(fams, metricCachedBytes)
		s.cachedCards = sc.quiet(fams, metricCachedCards)
		if n, ok := count5xx(fams); ok {
			if sc.seen5xx {
				s.server5xx = n - sc.last5xx
			}
			sc.last5xx, sc.seen5xx = n, true
		}
	}
	// Without the process collector (or without /metrics), read /proc.
	if math.IsNaN(s.rss) {
		s.rss = procRSS(sc.pid)
	}
	if math.IsNaN(s.fds) {
		s.fds = procFDs(sc.pid)
	}
	return err
}

func (sc *scraper) families() (map[string]*dto.MetricFamily, error) {
	res, err := sc.client.Get(sc.url)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, res.Body)
		return nil, fmt.Errorf("GET %s: %d", sc.url, res.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(res.Body)
}

// quiet is value without the warning, for a family that may well be absent.
func (sc *scraper) quiet(fams map[string]*dto.MetricFamily, name string) float64 {
	if _, ok := fams[name]; !ok {
		return nan()
	}
	return sc.value(fams, name)
}

// value sums the samples of a gauge, counter or untyped family (every tenant's index, say); NaN
// when the family is absent, said once.
func (sc *scraper) value(fams map[string]*dto.MetricFamily, name string) float64 {
	f, ok := fams[name]
	if !ok {
		if sc.warned == nil {
			sc.warned = map[string]bool{}
		}
		if !sc.warned[name] {
			sc.warned[name] = true
			progress("metrics: no %s", name)
		}
		return nan()
	}
	sum := 0.0
	for _, m := range f.GetMetric() {
		switch {
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Untyped != nil:
			sum += m.GetUntyped().GetValue()
		}
	}
	return sum
}

// count5xx is the number of API answers the server counted with code 5xx.
func count5xx(fams map[string]*dto.MetricFamily) (float64, bool) {
	f, ok := fams[metricRequests]
	if !ok {
		return 0, false
	}
	n := 0.0
	for _, m := range f.GetMetric() {
		for _, lp := range m.GetLabel() {
			if lp.GetName() == "code" && lp.GetValue() == "5xx" {
				n += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return n, true
}

// procRSS is VmRSS of /proc/<pid>/status, in bytes.
func procRSS(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nan()
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest) // "12345 kB"
			if len(f) == 2 {
				if kb, err := strconv.ParseFloat(f[0], 64); err == nil {
					return kb * 1024
				}
			}
		}
	}
	return nan()
}

// loadAverage is the 1-minute load average of /proc/loadavg.
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return nan()
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return nan()
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return nan()
	}
	return v
}

// procFDs counts /proc/<pid>/fd.
func procFDs(pid int) float64 {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return nan()
	}
	return float64(len(ents))
}

func nan() float64 { return math.NaN() }

// soak runs the load for o.d with o.clients clients and samples every o.every, printing each
// sample as it is taken; it returns the samples (the first, at 0, taken before the load starts).
// pg, when set, takes the database's statistics at the first sample under load and the last.
// An interrupt ends it early, with the samples so far.
func soak(ctx context.Context, o options, a *api, ts []*tenant, sc *scraper, pg *pgWatch, out io.Writer) ([]sample, error) {
	l := newLoad(a, ts, o.keep)
	fmt.Fprintln(out, header)
	var samples []sample
	s0 := sample{rate: nan(), p50: nan(), p99: nan(), errs: nan(), refused: nan()}
	if err := sc.scrape(&s0); err != nil {
		return nil, fmt.Errorf("scraping %s: %w", sc.url, err)
	}
	samples = append(samples, s0)
	fmt.Fprintln(out, s0.line())

	loadCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range o.clients {
		wg.Go(func() { l.client(loadCtx, w) })
	}
	defer func() {
		stop()
		wg.Wait()
	}()
	tick := time.NewTicker(o.every)
	defer tick.Stop()
	last := start
	// With -profiles: CPU profiles over the first and the last quarter of the run's second half.
	n := int(o.d / o.every)
	window := max(1, n/8)
	var profiling sync.WaitGroup
	defer profiling.Wait()
	for i := range n {
		if sc.pprof != "" && (i == n/2 || i == n-window) {
			name := map[bool]string{true: "early", false: "late"}[i == n/2]
			profiling.Go(func() { sc.profile(o.profiles, name, time.Duration(window)*o.every) })
		}
		select {
		case <-ctx.Done():
			fmt.Fprintln(out, "interrupted")
			if pg != nil {
				pg.mark(false)
			}
			return samples, nil
		case <-tick.C:
		}
		now := time.Now()
		iv := l.take()
		s := sample{t: now.Sub(start).Round(time.Second)}
		if err := sc.scrape(&s); err != nil {
			progress("scrape at %s: %v", s.t, err)
		}
		secs := now.Sub(last).Seconds()
		last = now
		s.rate = float64(len(iv.lat)) / secs
		s.p50, s.p99 = ms(pct(iv.lat, 50)), ms(pct(iv.lat, 99))
		s.errs, s.refused = float64(iv.errs), float64(iv.refused)
		samples = append(samples, s)
		fmt.Fprintln(out, s.line())
		if pg != nil && (i == 0 || i == n-1) {
			pg.mark(i == 0) // under load: the statistics lag by a second at most
		}
	}
	profiling.Wait() // the last profile ends with the load, not after it
	stop()
	wg.Wait()
	l.summary(out)
	return samples, nil
}

const header = "     t   req/s  p50 ms  p99 ms  errs  refused  5xx  rss MiB  non-Go MiB  heap MiB  idle MiB  goal MiB  goroutines  fds  index MiB  index cards  cached MiB  cached cards  load"

func (s sample) line() string {
	return fmt.Sprintf("%6s  %6s  %6s  %6s  %4s  %7s  %3s  %7s  %10s  %8s  %8s  %8s  %10s  %3s  %9s  %11s  %10s  %12s  %4s",
		s.t, num(s.rate, 0), num(s.p50, 2), num(s.p99, 2), num(s.errs, 0), num(s.refused, 0), num(s.server5xx, 0),
		num(s.rss/mib, 1), num(s.nonGo()/mib, 1), num(s.heap/mib, 1), num(s.idle/mib, 1), num(s.goal/mib, 1), num(s.goroutines, 0), num(s.fds, 0), num(s.indexBytes/mib, 1), num(s.indexCards, 0),
		num(s.cachedBytes/mib, 1), num(s.cachedCards, 0), num(s.load, 1))
}

const mib = 1 << 20

// num prints v with prec decimals, "-" for NaN.
func num(v float64, prec int) string {
	if math.IsNaN(v) {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// pct is the q-th percentile (0 < q < 100) of sorted latencies, 0 when there are none.
func pct(sorted []time.Duration, q int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[len(sorted)*q/100]
}

// summary prints the requests of the whole run by kind, and the first failures.
func (l *load) summary(out io.Writer) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintln(out, "\nrequests by kind (answered as expected / refused as expected / failed):")
	errs := 0
	for k := range kinds {
		t := l.total[k]
		fmt.Fprintf(out, "  %-18s %9d %7d %7d\n", kindNames[k], t.ok, t.refused, t.errs)
		errs += t.errs
	}
	if errs > 0 {
		fmt.Fprintf(out, "%d requests failed; the first %d:\n", errs, len(l.firstErrs))
		for _, e := range l.firstErrs {
			fmt.Fprintln(out, "  "+e)
		}
	}
}

// nonGo is the resident memory the Go runtime does not hold (NaN when either is unknown).
func (s sample) nonGo() float64 { return s.rss - s.goHeld }
