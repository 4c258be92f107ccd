package main

import (
	"fmt"
	"io"
	"math"
	"time"
)

// series is one column of the samples whose trend is reported.
type series struct {
	name string
	get  func(sample) float64
	// resolution is the smallest change the series can make (1 for counts): the noise is taken
	// as at least that, so that a count that never moved and then moved by one is not a trend.
	resolution float64
	// leak marks the series whose growth is a defect; the others are reported for information
	// (the request rate falling, or the p99 rising, over the run says the server slows down).
	leak bool
}

var trended = []series{
	{"rss MiB", func(s sample) float64 { return s.rss / mib }, 0, true},
	{"non-Go MiB", func(s sample) float64 { return s.nonGo() / mib }, 0, true},
	{"heap MiB", func(s sample) float64 { return s.heap / mib }, 0, true},
	// Free heap the runtime keeps (returned to the system only gradually), and the heap size
	// the next GC starts at: what the resident memory follows besides the heap in use.
	{"idle MiB", func(s sample) float64 { return s.idle / mib }, 0, false},
	{"goal MiB", func(s sample) float64 { return s.goal / mib }, 0, false},
	{"goroutines", func(s sample) float64 { return s.goroutines }, 1, true},
	{"fds", func(s sample) float64 { return s.fds }, 1, true},
	{"index MiB", func(s sample) float64 { return s.indexBytes / mib }, 0, true},
	{"index cards", func(s sample) float64 { return s.indexCards }, 1, true},
	// The encoded cards kept for answers grow until each tenant's cache holds its live cards
	// (or 32 MiB of JSON): reported, not a defect by itself.
	{"cached MiB", func(s sample) float64 { return s.cachedBytes / mib }, 0, false},
	{"cached cards", func(s sample) float64 { return s.cachedCards }, 1, false},
	{"errors", func(s sample) float64 { return s.errs }, 1, true},
	{"req/s", func(s sample) float64 { return s.rate }, 0, false},
	{"p99 ms", func(s sample) float64 { return s.p99 }, 0, false},
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

// report prints the trend of each series over the second half of the run and says whether one
// that must not grow does: its rise over that half (slope times the half's length) beyond twice
// its noise.
func report(out io.Writer, samples []sample) (grows bool) {
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
	fmt.Fprintln(out, "verdict: flat while the rise is within 2x the noise, else GROWS (a defect).")
	if end < 20*time.Minute {
		fmt.Fprintf(out, "(a run of %s is too short for a real verdict: leaks show over tens of minutes)\n", end)
	}
	fmt.Fprintf(out, "%-12s %10s %12s %10s %10s  %s\n", "series", "mean", "slope/10m", "rise", "noise", "verdict")
	for _, se := range trended {
		var xs, ys []float64
		for _, s := range half {
			if v := se.get(s); !math.IsNaN(v) {
				xs = append(xs, s.t.Seconds())
				ys = append(ys, v)
			}
		}
		f := fitLine(xs, ys)
		noise := math.Max(f.noise, se.resolution)
		rise := f.slope * f.span
		verdict := ""
		switch {
		case f.n < minTrendSamples:
			verdict = fmt.Sprintf("too few samples (%d)", f.n)
		case !se.leak && rise > 2*noise:
			verdict = "rises"
		case !se.leak && rise < -2*noise:
			verdict = "falls"
		case !se.leak:
			verdict = "steady"
		case rise > 2*noise:
			verdict, grows = "GROWS", true
		default:
			verdict = "flat"
		}
		fmt.Fprintf(out, "%-12s %10.2f %+12.2f %+10.2f %10.2f  %s\n", se.name, f.mean, f.slope*600, rise, noise, verdict)
	}
	if grows {
		fmt.Fprintln(out, "FAIL: a series grows beyond its noise")
	} else {
		fmt.Fprintln(out, "ok: no series grows beyond its noise")
	}
	return grows
}
