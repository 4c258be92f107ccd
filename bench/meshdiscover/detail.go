package main

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// sample is one timed query: its system, round (0: warm-up) and position in the round, how long
// it took, how many of its results the system answered with for the first time and how many of
// this client's garbage collections ended while it ran, and how long this client's and the
// agentcards server's threads waited for a CPU meanwhile (-runqueue).
type sample struct {
	sys   string
	round int
	pos   int
	q     string
	d     time.Duration
	fresh int
	gcs   int
	wait  time.Duration
}

// fresh counts the ids not in seen and adds them to it.
func fresh(seen map[string]bool, ids []string) int {
	n := 0
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			n++
		}
	}
	return n
}

// printDetail prints, per system, the warm-up's and each round's percentiles, agentcards'
// percentiles for queries with and without fresh results, and its ten slowest queries.
func printDetail(warm, samples []sample) {
	fmt.Printf("\n%-10s %8s %6s %12s %12s %12s %12s %8s\n", "system", "round", "n", "p50", "p90", "p99", "max", "fresh")
	for _, name := range []string{"mesh", "agentcards"} {
		rounds := map[int][]sample{}
		for _, s := range append(slices.Clone(warm), samples...) {
			if s.sys == name {
				rounds[s.round] = append(rounds[s.round], s)
			}
		}
		for r := 0; r <= len(rounds); r++ {
			if len(rounds[r]) == 0 {
				continue
			}
			label := fmt.Sprint(r)
			if r == 0 {
				label = "warm-up"
			}
			printRow(name, label, rounds[r])
		}
	}
	var mine, hot, cold []sample
	for _, s := range samples {
		if s.sys != "agentcards" {
			continue
		}
		mine = append(mine, s)
		if s.fresh == 0 {
			hot = append(hot, s)
		} else {
			cold = append(cold, s)
		}
	}
	fmt.Print("\nagentcards' first query of each round (an odd round follows mesh's):")
	for _, s := range samples {
		if s.sys == "agentcards" && s.pos == 0 {
			fmt.Printf(" %d: %s", s.round, s.d.Round(time.Microsecond))
		}
	}
	fmt.Println()
	printRow("agentcards", "fresh=0", hot)
	printRow("agentcards", "fresh>0", cold)

	if waits := waitsOf(mine); len(waits) > 0 && slices.Max(waits) > 0 {
		p := pct(waits)
		fmt.Printf("\nagentcards' queries' cpu wait (-runqueue): p50 %s, p90 %s, p99 %s\n", p[0], p[1], p[2])
	}
	slices.SortFunc(mine, func(a, b sample) int { return cmp.Compare(b.d, a.d) })
	fmt.Printf("\nagentcards' slowest queries (gc: this client's collections ended meanwhile; cpu wait: with -runqueue, its\nand the server's threads' wait for a CPU meanwhile):\n%12s %6s %6s %6s %6s %4s %10s  %s\n",
		"latency", "round", "pos", "words", "fresh", "gc", "cpu wait", "query")
	for _, s := range mine[:min(10, len(mine))] {
		fmt.Printf("%12s %6d %6d %6d %6d %4d %10s  %s\n", s.d.Round(time.Microsecond), s.round, s.pos, len(strings.Fields(s.q)),
			s.fresh, s.gcs, s.wait.Round(time.Microsecond), s.q)
	}
}

func printRow(name, label string, ss []sample) {
	if len(ss) == 0 {
		fmt.Printf("%-10s %8s %6d\n", name, label, 0)
		return
	}
	lat := make([]time.Duration, len(ss))
	fr := 0
	for i, s := range ss {
		lat[i] = s.d
		fr += s.fresh
	}
	p := pct(lat)
	fmt.Printf("%-10s %8s %6d %12s %12s %12s %12s %8d\n", name, label, len(ss), p[0], p[1], p[2], slices.Max(lat).Round(time.Microsecond), fr)
}

func waitsOf(ss []sample) []time.Duration {
	out := make([]time.Duration, len(ss))
	for i, s := range ss {
		out[i] = s.wait
	}
	return out
}
