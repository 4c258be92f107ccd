package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// fmtDur prints a duration in ms below a second, else in s.
func fmtDur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	case d >= 10*time.Millisecond:
		return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	}
}

// p50 is the median of xs (the mean of the middle two for an even count); max their largest.
func p50(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func maxOf(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return slices.Max(xs)
}

func secs(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = d.Seconds()
	}
	return out
}

func dur(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// durs prints "p50 / max" of ds.
func durs(ds []time.Duration) string {
	if len(ds) == 0 {
		return "-"
	}
	s := secs(ds)
	return fmtDur(dur(p50(s))) + " / " + fmtDur(dur(maxOf(s)))
}

// ratios prints "p50 / max" of the per-round ratios.
func ratios(xs []float64) string {
	if len(xs) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f / %.2f", p50(xs), maxOf(xs))
}

// pick returns one field of each restart.
func pick(rs []restart, f func(restart) time.Duration) []time.Duration {
	out := make([]time.Duration, len(rs))
	for i, r := range rs {
		out[i] = f(r)
	}
	return out
}

// perRound divides, round by round, the first searches by the round's scan.
func perRound(ds []time.Duration, scans []scanResult) []float64 {
	by := make([]time.Duration, len(scans))
	for i, s := range scans {
		by[i] = s.took
	}
	return divide(ds, by)
}

// divide divides, round by round, ds by by.
func divide(ds, by []time.Duration) []float64 {
	out := make([]float64, 0, len(ds))
	for i, d := range ds {
		if i < len(by) {
			out = append(out, d.Seconds()/by[i].Seconds())
		}
	}
	return out
}

func fromStart(r restart) time.Duration      { return r.fromStart }
func fromPort(r restart) time.Duration       { return r.fromPort }
func readyFromStart(r restart) time.Duration { return r.ready }
func readyFromPort(r restart) time.Duration  { return r.readyFromPort }
func portAt(r restart) time.Duration         { return r.port }

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

var dialectNames = map[string]string{"sqlite": "SQLite", "postgres": "Postgres", "mysql": "MySQL"}

// report prints a table per size, then the goals.
func report(out io.Writer, o options, results []*sizeResult) {
	fmt.Fprintf(out, "\nwarm start, %s: first search after a restart (q=%s, limit=10), %d rounds; in each round the\n"+
		"modes run in turn, in an order rotating from round to round; figures are p50 / max over the rounds\n",
		dialectNames[o.dialect], o.query, o.rounds)
	for _, res := range results {
		warmRuns, coldRuns, readyRuns, buildRuns := res.runs[warm], res.runs[cold], res.runs[ready], res.runs[build]
		scans := make([]time.Duration, len(res.scans))
		for i, s := range res.scans {
			scans[i] = s.took
		}
		matched := 0
		if len(res.scans) > 0 {
			matched = res.scans[0].matched
		}
		fmt.Fprintf(out, "\n%d cards (registered in %s; the server's search total %d, the scan's substring matches %d)\n",
			res.n, fmtDur(res.seedTook), res.total, matched)
		fmt.Fprintf(out, "first search after the registrations: 200 in %s, after %d answers 503 (goal: within 2 s)\n",
			fmtDur(res.firstSearch), res.firstRefused)
		tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "\tfrom process start\tfrom port's first answer\t\n")
		fmt.Fprintf(tw, "port answers (GET /health 200)\t%s\t\t\n", durs(pick(slices.Concat(warmRuns, coldRuns, readyRuns, buildRuns), portAt)))
		fmt.Fprintf(tw, "first search, warm start (warmWindow 24h)\t%s\t%s\t\n", durs(pick(warmRuns, fromStart)), durs(pick(warmRuns, fromPort)))
		fmt.Fprintf(tw, "first search, no warm start (warmWindow 0)\t%s\t%s\t\n", durs(pick(coldRuns, fromStart)), durs(pick(coldRuns, fromPort)))
		fmt.Fprintf(tw, "/ready 200 with warmReady (%s)\t%s\t%s\t\n", snapshotsNote(o), durs(pick(readyRuns, readyFromStart)), durs(pick(readyRuns, readyFromPort)))
		fmt.Fprintf(tw, "/ready 200 with warmReady, built from the cards (snapshotDir none)\t%s\t%s\t\n", durs(pick(buildRuns, readyFromStart)), durs(pick(buildRuns, readyFromPort)))
		fmt.Fprintf(tw, "a search once /ready answered 200\t\t%s\t\n", durs(pick(readyRuns, fromPort)))
		fmt.Fprintf(tw, "SQL scan (database/sql: select, decode, match)\t\t%s\t\n", durs(scans))
		fmt.Fprintf(tw, "first search / SQL scan, warm start (per round)\t%s\t%s\t\n",
			ratios(perRound(pick(warmRuns, fromStart), res.scans)), ratios(perRound(pick(warmRuns, fromPort), res.scans)))
		fmt.Fprintf(tw, "first search / SQL scan, no warm start (per round)\t%s\t%s\t\n",
			ratios(perRound(pick(coldRuns, fromStart), res.scans)), ratios(perRound(pick(coldRuns, fromPort), res.scans)))
		fmt.Fprintf(tw, "first search, warm start / the warm-up (per round)\t%s\t%s\t\n",
			ratios(divide(pick(warmRuns, fromStart), pick(readyRuns, readyFromStart))), ratios(divide(pick(warmRuns, fromPort), pick(readyRuns, readyFromPort))))
		_ = tw.Flush()
		var notes []string
		for _, r := range slices.Concat(readyRuns, buildRuns) {
			if r.unready == 0 {
				notes = append(notes, "/ready answered 200 at its first ask after a start with warmReady: no warm-up was seen")
				break
			}
		}
		if res.unrecorded > 0 {
			notes = append(notes, fmt.Sprintf("%d restarts: their search was not seen in tenant_activity within 5 s", res.unrecorded))
		}
		for _, n := range notes {
			fmt.Fprintf(out, "note: %s\n", n)
		}
	}

	fmt.Fprintf(out, "\ngoals (warm start: the search sent as soon as the port answered; p50 over the rounds)\n")
	for _, res := range results {
		warmRuns, readyRuns := res.runs[warm], res.runs[ready]
		switch {
		case res.n == 10000 && len(warmRuns) > 0 && len(res.scans) > 0:
			port, start := p50(perRound(pick(warmRuns, fromPort), res.scans)), p50(perRound(pick(warmRuns, fromStart), res.scans))
			fmt.Fprintf(out, "10k: first search / SQL scan <= 2: %.2f from the port's answer: %s; %.2f from process start: %s\n",
				port, met(port <= 2), start, met(start <= 2))
		case res.n == 100000:
			if len(warmRuns) > 0 {
				port, start := dur(p50(secs(pick(warmRuns, fromPort)))), dur(p50(secs(pick(warmRuns, fromStart))))
				fmt.Fprintf(out, "100k: first search <= 3 s: %s from the port's answer: %s; %s from process start: %s\n",
					fmtDur(port), met(port <= 3*time.Second), fmtDur(start), met(start <= 3*time.Second))
			}
			for _, b := range []struct {
				name string
				runs []restart
			}{{"the warm-up (/ready 200 with warmReady, " + snapshotsNote(o) + ")", readyRuns}, {"the build from the cards (/ready 200 with warmReady, snapshotDir none)", res.runs[build]}} {
				if len(b.runs) == 0 {
					continue
				}
				port, start := dur(p50(secs(pick(b.runs, readyFromPort)))), dur(p50(secs(pick(b.runs, readyFromStart))))
				fmt.Fprintf(out, "100k: %s <= 3 s: %s from the port's answer: %s; %s from process start: %s\n",
					b.name, fmtDur(port), met(port <= 3*time.Second), fmtDur(start), met(start <= 3*time.Second))
			}
			if len(warmRuns) > 0 && len(readyRuns) > 0 {
				fmt.Fprintf(out, "100k: first search / the warm-up, from process start (per round, p50 / max): %s\n",
					ratios(divide(pick(warmRuns, fromStart), pick(readyRuns, readyFromStart))))
			}
		}
	}
	var other []string
	for _, res := range results {
		if res.n != 10000 && res.n != 100000 {
			other = append(other, fmt.Sprint(res.n))
		}
	}
	if len(other) > 0 {
		fmt.Fprintf(out, "(no goal is set at %s cards)\n", strings.Join(other, ", "))
	}
}

// snapshotsNote says where mode ready's index comes from.
func snapshotsNote(o options) string {
	if o.noSnapshots {
		return "snapshotDir none: built from the cards"
	}
	return "read back from its snapshot"
}
