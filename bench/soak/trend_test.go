package main

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"
)

// seriesOf is the trended series named name.
func seriesOf(t *testing.T, name string) series {
	t.Helper()
	for _, se := range trended {
		if se.name == name {
			return se
		}
	}
	t.Fatalf("no series %q", name)
	return series{}
}

// TestFitLine: the slope, mean, span and noise of a line with alternating residuals of ±1.
func TestFitLine(t *testing.T) {
	var xs, ys []float64
	for i := range 10 {
		xs = append(xs, float64(10*i))
		ys = append(ys, 100+0.5*float64(10*i)+float64(1-2*(i%2)))
	}
	f := fitLine(xs, ys)
	if f.n != 10 || f.span != 90 || math.Abs(f.slope-0.5) > 0.01 || math.Abs(f.mean-122.5) > 0.01 || f.noise < 0.9 || f.noise > 1.2 {
		t.Errorf("fit %+v", f)
	}
}

// TestVerdict: memory and the p99 fail when they rise beyond twice their noise, the request rate
// when it falls so; a move within that, or the harmless way, does not fail; a series only
// reported never does; too few samples give no verdict.
func TestVerdict(t *testing.T) {
	rate, p99, rss, idle := seriesOf(t, "req/s"), seriesOf(t, "p99 ms"), seriesOf(t, "rss MiB"), seriesOf(t, "idle MiB")
	// rise = slope x span: over a half of 900 s, noise 100.
	line := func(rise, noise float64) fit { return fit{n: 90, slope: rise / 900, span: 900, noise: noise} }
	for _, c := range []struct {
		name   string
		se     series
		f      fit
		word   string
		failed bool
	}{
		{"req/s falling by 3x its noise", rate, line(-300, 100), "FALLS", true},
		{"req/s falling within 2x its noise", rate, line(-150, 100), "flat", false},
		{"req/s rising", rate, line(300, 100), "rises", false},
		{"p99 rising by 3x its noise", p99, line(30, 10), "GROWS", true},
		{"p99 falling", p99, line(-30, 10), "falls", false},
		{"p99 within its noise", p99, line(15, 10), "flat", false},
		{"rss growing", rss, line(50, 5), "GROWS", true},
		{"idle memory rising (reported only)", idle, line(50, 5), "rises", false},
		{"idle memory steady", idle, line(1, 5), "steady", false},
		{"too few samples", rate, fit{n: 3, slope: -1, span: 30}, "too few samples (3)", false},
	} {
		word, failed := verdict(c.se, c.f)
		if word != c.word || failed != c.failed {
			t.Errorf("%s: %q, failed %v; want %q, %v", c.name, word, failed, c.word, c.failed)
		}
	}
	// A count that never moved and then moved by one is within its resolution.
	if word, failed := verdict(seriesOf(t, "goroutines"), fit{n: 10, slope: 1.0 / 90, span: 90}); failed {
		t.Errorf("goroutines up by one without noise: %s", word)
	}
}

// TestReportFailsOnSlowdown: a run whose request rate falls steadily over its second half, with
// memory flat, fails and names the series, and says when the machine's load rose meanwhile; the
// same run at a steady rate passes.
func TestReportFailsOnSlowdown(t *testing.T) {
	flat := func(int) float64 { return 2 }
	run := func(rate, load func(i int) float64) (bool, string) {
		var samples []sample
		for i := range 31 {
			s := sample{t: time.Duration(10*i) * time.Second, rss: 200 * mib, heap: 100 * mib, goroutines: 90, fds: 60,
				indexBytes: nan(), indexCards: nan(), cachedBytes: nan(), cachedCards: nan(), goHeld: 150 * mib, idle: nan(), goal: nan(),
				rate: rate(i), p99: 60 + float64(i%3), errs: 0, load: load(i)}
			if i == 0 {
				s.rate, s.p99, s.errs = nan(), nan(), nan()
			}
			samples = append(samples, s)
		}
		var out bytes.Buffer
		failed := report(&out, samples)
		return failed, out.String()
	}
	wobble := func(i int) float64 { return float64(40 * (i%3 - 1)) }
	falling := func(i int) float64 { return 3300 - 40*float64(i) + wobble(i) }
	failed, out := run(falling, flat)
	if !failed || !strings.Contains(out, "FAIL: req/s moved") {
		t.Errorf("a falling rate did not fail:\n%s", out)
	}
	if strings.Contains(out, "other work") {
		t.Errorf("a fall on a machine whose load stayed flat blamed on other work:\n%s", out)
	}
	if failed, out = run(falling, func(i int) float64 { return 2 + 0.3*float64(i) }); !failed || !strings.Contains(out, "other work may have slowed") {
		t.Errorf("a fall while the machine's load rose does not say so:\n%s", out)
	}
	failed, out = run(func(i int) float64 { return 3300 + wobble(i) }, flat)
	if failed || !strings.Contains(out, "ok:") {
		t.Errorf("a steady run failed:\n%s", out)
	}
}
