package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// ms prints a latency in milliseconds.
func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond)) }

// report prints the writer table, the mixed table and the goals.
func (b *bench) report(out io.Writer) {
	o := b.o
	fmt.Fprintf(out, "\nwriteload: %s, %d rounds of %s per phase, server and baseline alternating; loaded tenants hold %d cards\n",
		o.dialect, o.rounds, o.d, o.cards)
	fmt.Fprintf(out, "server: POST a new card, then PATCH it (If-Match), in turn, over HTTP; baseline: the same rows with database/sql\n\n")
	fmt.Fprintf(out, "%7s %-6s | %10s %9s %9s | %10s %9s %9s | %15s %-13s | %s\n",
		"writers", "index", "server w/s", "p50", "p99", "base w/s", "p50", "p99", "server/baseline", "(rounds)", "errors s/b")
	for _, n := range o.writers {
		for _, loaded := range []bool{false, true} {
			p := phase{n, loaded}
			s, bl := b.server[p], b.baseline[p]
			sl, bll := s.all.latencies(kindRegister, kindPatch), bl.all.latencies(kindRegister, kindPatch)
			fmt.Fprintf(out, "%7d %-6s | %10.0f %9s %9s | %10.0f %9s %9s | %15.2f %-13s | %d/%d\n",
				n, p.index(), s.all.rate(kindRegister, kindPatch), ms(pct(sl, 50)), ms(pct(sl, 99)),
				bl.all.rate(kindRegister, kindPatch), ms(pct(bll, 50)), ms(pct(bll, 99)),
				b.ratio(p), roundRange(s.rates, bl.rates), s.all.errs, bl.all.errs)
		}
	}

	if o.mixed {
		m := &b.mixed.all
		fmt.Fprintf(out, "\nmixed: %d clients, 70%% free-text search (q=<one word>, limit=10) / 30%% writes (PATCH or PUT of an existing card), %d cards, index loaded, %d x %s\n",
			o.clients, o.cards, o.rounds, o.d)
		fmt.Fprintf(out, "%-8s %10s %9s %9s\n", "class", "req/s", "p50", "p99")
		for _, c := range []struct {
			name  string
			kinds []kind
		}{{"search", []kind{kindSearch}}, {"write", []kind{kindPatch, kindPut}}, {" patch", []kind{kindPatch}}, {" put", []kind{kindPut}}} {
			l := m.latencies(c.kinds...)
			fmt.Fprintf(out, "%-8s %10.0f %9s %9s\n", c.name, m.rate(c.kinds...), ms(pct(l, 50)), ms(pct(l, 99)))
		}
		fmt.Fprintf(out, "failed   %10d\n", m.errs)
		f := &b.floor.all
		fmt.Fprintf(out, "the same mix with the writes made by the baseline (database/sql in the bench's process: no HTTP, no read before the write):\n")
		for _, c := range []struct {
			name  string
			kinds []kind
		}{{"search", []kind{kindSearch}}, {"write", []kind{kindPatch}}} {
			l := f.latencies(c.kinds...)
			fmt.Fprintf(out, "%-8s %10.0f %9s %9s\n", c.name, f.rate(c.kinds...), ms(pct(l, 50)), ms(pct(l, 99)))
		}
		fmt.Fprintf(out, "failed   %10d\n", f.errs)
	}

	if o.batch > 0 {
		fmt.Fprintf(out, "\nregistration: %d clients registering new cards in a tenant with no index, %d x %s\n", o.regWriters, o.rounds, o.d)
		fmt.Fprintf(out, "%-16s %10s %9s %9s %-13s %s\n", "cards a request", "cards/s", "p50", "p99", "(rounds)", "errors")
		for _, r := range []struct {
			n int
			r *rounds
		}{{1, &b.single}, {o.batch, &b.batched}} {
			l := r.r.all.latencies(kindRegister)
			fmt.Fprintf(out, "%-16d %10.0f %9s %9s %-13s %d\n", r.n, r.r.all.rate(kindRegister), ms(pct(l, 50)), ms(pct(l, 99)), rateRange(r.r.rates), r.r.all.errs)
		}
	}

	fmt.Fprintf(out, "\n%-58s %9s %8s\n", "goal (issue 11)", "measured", "goal")
	throughputNote := ""
	if o.dialect == "mysql" {
		throughputNote = " (set for SQLite and Postgres)"
	}
	if slices.Contains(o.writers, 16) {
		for _, loaded := range []bool{false, true} {
			p := phase{16, loaded}
			goal(out, fmt.Sprintf("16 writers, index %s: writes/s server / baseline", p.index()), b.ratio(p), ">=", 0.5, throughputNote)
		}
	}
	if o.mixed {
		m := &b.mixed.all
		w, s := pct(m.latencies(kindPatch, kindPut), 99), pct(m.latencies(kindSearch), 99)
		goal(out, "mixed 70/30: write p99 / free-text search p99", float64(w)/float64(s), "<=", 2, fmt.Sprintf(" (%s / %s)", ms(w), ms(s)))
		f := &b.floor.all
		w, s = pct(f.latencies(kindPatch), 99), pct(f.latencies(kindSearch), 99)
		fmt.Fprintf(out, "  %-56s %9.2f %8s  (%s / %s)\n", "the same, writes by the baseline", float64(w)/float64(s), "", ms(w), ms(s))
	}
	if o.batch > 0 {
		var ratio float64
		if single := b.single.all.rate(kindRegister); single > 0 {
			ratio = b.batched.all.rate(kindRegister) / single
		}
		goal(out, fmt.Sprintf("register, %d clients: cards/s batch of %d / one a request", o.regWriters, o.batch), ratio, ">=", 5, fmt.Sprintf(" (rounds %s)", roundRange(b.batched.rates, b.single.rates)))
	}
	if slices.Contains(o.writers, 1) {
		l := pct(b.server[phase{1, true}].all.latencies(kindRegister, kindPatch), 50)
		n := pct(b.server[phase{1, false}].all.latencies(kindRegister, kindPatch), 50)
		goal(out, "lone writer: p50 index loaded / p50 no index", float64(l)/float64(n), "<=", 1.5, fmt.Sprintf(" (%s / %s)", ms(l), ms(n)))
		for _, k := range []struct {
			name string
			k    kind
		}{{"register", kindRegister}, {"patch", kindPatch}} {
			l := pct(b.server[phase{1, true}].all.latencies(k.k), 50)
			n := pct(b.server[phase{1, false}].all.latencies(k.k), 50)
			fmt.Fprintf(out, "  %-56s %9.2f %8s  (%s / %s)\n", "of which "+k.name+" alone", float64(l)/float64(n), "", ms(l), ms(n))
		}
	}
}

// ratio is the phase's server writes/s over its baseline's, over all rounds.
func (b *bench) ratio(p phase) float64 {
	base := b.baseline[p].all.rate(kindRegister, kindPatch)
	if base == 0 {
		return 0
	}
	return b.server[p].all.rate(kindRegister, kindPatch) / base
}

// roundRange is the lowest and highest server/baseline ratio of a single round.
func roundRange(server, base []float64) string {
	var rs []float64
	for i := range min(len(server), len(base)) {
		if base[i] > 0 {
			rs = append(rs, server[i]/base[i])
		}
	}
	if len(rs) == 0 {
		return ""
	}
	return fmt.Sprintf("(%.2f-%.2f)", slices.Min(rs), slices.Max(rs))
}

// rateRange is the lowest and highest rate of a single round.
func rateRange(rates []float64) string {
	if len(rates) == 0 {
		return ""
	}
	return fmt.Sprintf("(%.0f-%.0f)", slices.Min(rates), slices.Max(rates))
}

// goal prints one goal line: what, the measure, the goal, and whether it is met.
func goal(out io.Writer, what string, v float64, op string, limit float64, note string) {
	met := v <= limit
	if op == ">=" {
		met = v >= limit
	}
	verdict := "met"
	if !met {
		verdict = "NOT met"
	}
	fmt.Fprintf(out, "%-58s %9.2f %5s %.1f  %s%s\n", what, v, op, limit, verdict, note)
}

// failures reports the phases where requests or transactions failed, as an error.
func (b *bench) failures() error {
	var lines []string
	for _, side := range []struct {
		name string
		m    map[phase]*rounds
	}{{"server", b.server}, {"baseline", b.baseline}} {
		for _, n := range b.o.writers {
			for _, loaded := range []bool{false, true} {
				if r := side.m[phase{n, loaded}]; r != nil && r.all.errs > 0 {
					lines = append(lines, fmt.Sprintf("%s, %d writers, index %s: %d failed, first: %s", side.name, n, phase{n, loaded}.index(), r.all.errs, r.all.firstErr))
				}
			}
		}
	}
	for _, r := range []struct {
		name string
		r    *rounds
	}{{"register one a request", &b.single}, {"register in batches", &b.batched}} {
		if r.r.all.errs > 0 {
			lines = append(lines, fmt.Sprintf("%s: %d failed, first: %s", r.name, r.r.all.errs, r.r.all.firstErr))
		}
	}
	if m := b.mixed.all; m.errs > 0 {
		lines = append(lines, fmt.Sprintf("mixed: %d failed, first: %s", m.errs, m.firstErr))
	}
	if f := b.floor.all; f.errs > 0 {
		lines = append(lines, fmt.Sprintf("mixed, writes by the baseline: %d failed, first: %s", f.errs, f.firstErr))
	}
	if len(lines) > 0 {
		return fmt.Errorf("some operations failed:\n%s", strings.Join(lines, "\n"))
	}
	return nil
}
