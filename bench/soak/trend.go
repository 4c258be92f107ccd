package main

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// series is one column of the samples whose trend is reported.
type series struct {
	name string
	get  func(sample) float64
	// resolution is the smallest change the series can make (1 for counts): the noise is taken
	// as at least that, so that a count that never moved and then moved by one is not a trend.
	resolution float64
	// worse is the direction of a change that is a defect; the other series are reported for
	// information.
	worse direction
}

// direction is which way a series must not move beyond its noise.
type direction int

const (
	informative direction = iota
	mustNotRise           // memory, goroutines, descriptors, errors: a leak; the p99: a slowdown
	mustNotFall           // the request rate: a slowdown
)

var trended = []series{
	{"rss MiB", func(s sample) float64 { return s.rss / mib }, 0, mustNotRise},
	{"non-Go MiB", func(s sample) float64 { return s.nonGo() / mib }, 0, mustNotRise},
	{"heap MiB", func(s sample) float64 { return s.heap / mib }, 0, mustNotRise},
	// Free heap the runtime keeps (returned to the system only gradually), and the heap size
	// the next GC starts at: what the resident memory follows besides the heap in use.
	{"idle MiB", func(s sample) float64 { return s.idle / mib }, 0, informative},
	{"goal MiB", func(s sample) float64 { return s.goal / mib }, 0, informative},
	{"goroutines", func(s sample) float64 { return s.goroutines }, 1, mustNotRise},
	{"fds", func(s sample) float64 { return s.fds }, 1, mustNotRise},
	{"index MiB", func(s sample) float64 { return s.indexBytes / mib }, 0, mustNotRise},
	{"index cards", func(s sample) float64 { return s.indexCards }, 1, mustNotRise},
	// The encoded cards kept for answers grow until each tenant's cache holds its live cards
	// (or 32 MiB of JSON): reported, not a defect by itself.
	{"cached MiB", func(s sample) float64 { return s.cachedBytes / mib }, 0, informative},
	{"cached cards", func(s sample) float64 { return s.cachedCards }, 1, informative},
	{"errors", func(s sample) float64 { return s.errs }, 1, mustNotRise},
	// The same load throughout: a server (or database) that slows down serves fewer requests
	// and answers them later.
	{"req/s", func(s sample) float64 { return s.rate }, 0, mustNotFall},
	{"p99 ms", func(s sample) float64 { return s.p99 }, 0, mustNotRise},
	// Not the server's: a rate that falls while this rises may be the machine's doing.
	{"load", func(s sample) float64 { return s.load }, 0, informative},
}

// minTrendSamples is the fewest samples a verdict is given on.
const minTrendSamples = 4

// fit is the least-squares line through a series' points over the second half of the run.
type fit struct {
	n           int
	mean, slope float64 // slope per second
	span        float64 // seconds from the first point to the last
	noise       float64 // standard deviation of the residuals
}

func fitLine(xs, ys []float64) fit {
	f := fit{n: len(xs)}
	if f.n == 0 {
		return f
	}
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx /= float64(f.n)
	my /= float64(f.n)
	f.mean = my
	var sxy, sxx float64
	for i := range xs {
		sxy += (xs[i] - mx) * (ys[i] - my)
		sxx += (xs[i] - mx) * (xs[i] - mx)
	}
	if sxx > 0 {
		f.slope = sxy / sxx
	}
	f.span = xs[len(xs)-1] - xs[0]
	if f.n > 2 {
		var ss float64
		for i := range xs {
			r := ys[i] - (my + f.slope*(xs[i]-mx))
			ss += r * r
		}
		f.noise = math.Sqrt(ss / float64(f.n-2))
	}
	return f
}

// verdict judges a series by its fit over the second half of the run: its rise over that half
// (slope times the half's length) against twice its noise (at least its resolution). failed
// says the series moved beyond that in the direction it must not.
func verdict(se series, f fit) (word string, failed bool) {
	noise := math.Max(f.noise, se.resolution)
	rise := f.slope * f.span
	switch {
	case f.n < minTrendSamples:
		return fmt.Sprintf("too few samples (%d)", f.n), false
	case se.worse == mustNotRise && rise > 2*noise:
		return "GROWS", true
	case se.worse == mustNotFall && rise < -2*noise:
		return "FALLS", true
	case rise > 2*noise: // a series only reported, or one moving the harmless way
		return "rises", false
	case rise < -2*noise:
		return "falls", false
	case se.worse != informative:
		return "flat", false
	}
	return "steady", false
}

// report prints the trend of each series over the second half of the run and says whether one
// moved beyond its noise the way it must not: memory and the like growing (a leak), the request
// rate falling or the p99 growing (a slowdown).
func report(out io.Writer, samples []sample) (failed bool) {
	if len(samples) < 2 {
		fmt.Fprintln(out, "no samples under load: no trend")
		return false
	}
	end := samples[len(samples)-1].t
	var half []sample
	for _, s := range samples[1:] { // the first is from before the load
		if s.t >= end/2 {
			half = append(half, s)
		}
	}
	fmt.Fprintf(out, "\ntrend over the second half of the run (%s to %s, %d samples; the first half is warm-up).\n",
		half[0].t, end, len(half))
	fmt.Fprintln(out, "slope: least squares, per 10 minutes; rise: the slope over the half; noise: sd of the residuals;")
	fmt.Fprintln(out, "verdict: flat while the rise is within 2x the noise, else GROWS (memory and the like: a leak;")
	fmt.Fprintln(out, "p99: a slowdown) or FALLS (req/s: a slowdown); rises or falls the harmless way, or steady (reported only).")
	if end < 20*time.Minute {
		fmt.Fprintf(out, "(a run of %s is too short for a real verdict: leaks and slowdowns show over tens of minutes)\n", end)
	}
	fmt.Fprintf(out, "%-12s %10s %12s %10s %10s  %s\n", "series", "mean", "slope/10m", "rise", "noise", "verdict")
	var bad []string
	slower, busier := false, false // a slowdown; the machine's load rising with it
	for _, se := range trended {
		var xs, ys []float64
		for _, s := range half {
			if v := se.get(s); !math.IsNaN(v) {
				xs = append(xs, s.t.Seconds())
				ys = append(ys, v)
			}
		}
		f := fitLine(xs, ys)
		word, failed := verdict(se, f)
		if failed {
			bad = append(bad, se.name)
			slower = slower || se.name == "req/s" || se.name == "p99 ms"
		}
		busier = busier || se.name == "load" && word == "rises"
		fmt.Fprintf(out, "%-12s %10.2f %+12.2f %+10.2f %10.2f  %s\n", se.name, f.mean, f.slope*600, f.slope*f.span, math.Max(f.noise, se.resolution), word)
	}
	if len(bad) > 0 {
		fmt.Fprintf(out, "FAIL: %s moved beyond the noise the way it must not\n", strings.Join(bad, ", "))
		if slower && busier {
			fmt.Fprintln(out, "(the machine's load average rose over the same half: other work may have slowed the run; run again on a quiet machine)")
		}
		return true
	}
	fmt.Fprintln(out, "ok: no series grows, and the request rate does not fall, beyond its noise")
	return false
}
