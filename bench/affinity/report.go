package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/agentcards/agentcards/bench/internal/probe"

	"github.com/agentcards/agentcards/bench/internal/proc"
)

// report prints the load rounds' latencies and, once the outage copies are filled, each
// replica's memory, with affinity over round robin.
func report(ctx context.Context, c *probe.Client, o options, sets []*set, samples [2][]sample, took [2]time.Duration) error {
	fmt.Printf("\nload: %d clients, %d rounds of %s a routing; load average %s\n", o.clients, o.rounds, o.d, probe.LoadAverage())
	fmt.Printf("%-12s %8s %8s %9s %9s %9s %7s %7s\n", "routing", "searches", "req/s", "p50", "p99", "max", "failed", "loaded")
	var p50, p99, rate [2]float64
	for k, s := range sets {
		all := latencies(samples[k], func(sample) bool { return true })
		failed, loaded := 0, 0
		for _, x := range samples[k] {
			if x.failed {
				failed++
			}
			if x.loaded {
				loaded++
			}
		}
		rate[k] = float64(len(all)) / took[k].Seconds()
		p50[k], p99[k] = float64(probe.Percentile(all, 50)), float64(probe.Percentile(all, 99))
		fmt.Printf("%-12s %8d %8.0f %9s %9s %9s %7d %7d\n", s.name, len(all), rate[k], probe.Percentile(all, 50), probe.Percentile(all, 99), probe.Percentile(all, 100), failed, loaded)
	}
	var mem [2][]memory
	for k, s := range sets {
		if err := filled(ctx, c, s.servers); err != nil {
			return err
		}
		for _, srv := range s.servers {
			m, err := memoryOf(ctx, c, srv)
			if err != nil {
				return err
			}
			mem[k] = append(mem[k], m)
		}
	}
	fmt.Printf("\nmemory per replica, outage copies filled; load average %s\n", probe.LoadAverage())
	printMemory(sets[0].name, 0, mem[0])
	printMemory(sets[1].name, 0, mem[1])
	mean := func(ms []memory, f func(memory) float64) float64 {
		var sum float64
		for _, m := range ms {
			sum += f(m)
		}
		return sum / float64(len(ms))
	}
	ratio := func(f func(memory) float64) float64 { return mean(mem[0], f) / mean(mem[1], f) }
	fmt.Printf("\naffinity / round robin: indexes loaded %.2f, index memory %.2f (index %.2f, cached %.2f, copy %.2f), RSS %.2f\n",
		ratio(func(m memory) float64 { return m.tenants }), ratio(memory.total),
		ratio(func(m memory) float64 { return m.index }), ratio(func(m memory) float64 { return m.cached }),
		ratio(func(m memory) float64 { return m.copy }), ratio(func(m memory) float64 { return m.rss }))
	fmt.Printf("affinity / round robin: search p50 %.2f, p99 %.2f, req/s %.2f\n", p50[0]/p50[1], p99[0]/p99[1], rate[0]/rate[1])
	cards := 0
	for i := range o.tenants {
		cards += cardsIn(o, i)
	}
	all := mean(mem[1], memory.total)
	fmt.Printf("round robin holds every card on each replica: %.0f bytes a card (index %.0f, cached %.0f, copy %.0f)\n",
		all/float64(cards), mean(mem[1], func(m memory) float64 { return m.index })/float64(cards),
		mean(mem[1], func(m memory) float64 { return m.cached })/float64(cards), mean(mem[1], func(m memory) float64 { return m.copy })/float64(cards))
	return nil
}

// printMemory prints each replica's memory, numbering them from first.
func printMemory(name string, first int, ms []memory) {
	for k, m := range ms {
		fmt.Printf("  %-12s replica %d: %4.0f indexes, index %s + cached %s + copy %s = %s; RSS %s\n",
			name, first+k, m.tenants, mib(m.index), mib(m.cached), mib(m.copy), mib(m.total()), mib(m.rss))
	}
}

// stopOne stops one replica of s under load, reports what the clients saw and the survivors'
// memory, then starts it again with the default warm start and reports what it loaded.
func stopOne(ctx context.Context, c *probe.Client, bin, dir string, env []string, o options, s *set) error {
	const victim = 0
	owned := 0
	for i := range o.tenants {
		if s.proxy.Owner(tenantID(i)) == victim {
			owned++
		}
	}
	how := "SIGTERM"
	if o.kill {
		how = "SIGKILL"
	}
	fmt.Printf("\nstop: replica %d (%d tenants) gets %s after %s of load through the affinity proxy, %s more after; load average %s\n",
		victim, owned, how, o.stopAfter, o.afterStop, probe.LoadAverage())
	done := make(chan []sample)
	go func() { done <- load(ctx, c, s.base, o, o.stopAfter+o.afterStop, 20) }()
	time.Sleep(o.stopAfter)
	stopAt := time.Now()
	if o.kill {
		_ = syscall.Kill(s.servers[victim].Pid(), syscall.SIGKILL)
	}
	s.servers[victim].Stop()
	fmt.Printf("  the process ended %s after the signal\n", time.Since(stopAt).Round(time.Millisecond))
	samples := <-done
	var failed int
	var firstFail, lastFail time.Duration = -1, -1
	var lastLoad time.Duration
	movedSeen := map[int]bool{}
	for _, x := range samples {
		since := x.at.Sub(stopAt)
		if x.failed && since+x.took >= 0 {
			failed++
			if firstFail < 0 {
				firstFail = since
			}
			lastFail = since + x.took
		}
		if since >= 0 && s.proxy.Owner(tenantID(x.tenant)) == victim {
			movedSeen[x.tenant] = true
			if x.loaded && since+x.took > lastLoad {
				lastLoad = since + x.took
			}
		}
	}
	window := func(from, to time.Duration) func(sample) bool {
		return func(x sample) bool { d := x.at.Sub(stopAt); return d >= from && d < to }
	}
	before := latencies(samples, window(-time.Hour, 0))
	moved := latencies(samples, func(x sample) bool {
		return x.at.After(stopAt) && x.loaded && s.proxy.Owner(tenantID(x.tenant)) == victim
	})
	if failed == 0 {
		fmt.Printf("  clients saw no error\n")
	} else {
		fmt.Printf("  clients saw %d errors, from %s to %s after the signal\n", failed, firstFail.Round(time.Millisecond), lastFail.Round(time.Millisecond))
	}
	fmt.Printf("  moved tenants searched after the stop: %d of %d; %d searches loaded their index on the new replica: p50 %s, p99 %s, max %s; the last ended %s after the signal\n",
		len(movedSeen), owned, len(moved), probe.Percentile(moved, 50), probe.Percentile(moved, 99), probe.Percentile(moved, 100), lastLoad.Round(time.Millisecond))
	fmt.Printf("  %-22s %8s %9s %9s\n", "all searches", "searches", "p50", "p99")
	for _, w := range []struct {
		name     string
		from, to time.Duration
	}{{"before the stop", -time.Hour, 0}, {"first 1 s after", 0, time.Second}, {"1-5 s after", time.Second, 5 * time.Second}, {"from 5 s after", 5 * time.Second, time.Hour}} {
		ds := before
		if w.to > 0 {
			ds = latencies(samples, window(w.from, w.to))
		}
		fmt.Printf("  %-22s %8d %9s %9s\n", w.name, len(ds), probe.Percentile(ds, 50), probe.Percentile(ds, 99))
	}
	survivors := s.servers[victim+1:]
	if err := filled(ctx, c, survivors); err != nil {
		return err
	}
	var ms []memory
	for _, srv := range survivors {
		m, err := memoryOf(ctx, c, srv)
		if err != nil {
			return err
		}
		ms = append(ms, m)
	}
	fmt.Printf("  survivors, outage copies filled:\n")
	printMemory("after stop", victim+1, ms)

	// Again on its address, with the default warm start, as a restarted replica would be.
	addr := strings.TrimPrefix(s.servers[victim].Base, "http://")
	start := time.Now()
	srv, err := proc.Start(bin, dir, append(env, "AGENTCARDS_DATA_DIR="+s.dirs[victim], "AGENTCARDS_SERVER_ADDR="+addr,
		"AGENTCARDS_SEARCH_WARM_WINDOW=24h", "AGENTCARDS_SEARCH_WARM_READY=true"))
	if err != nil {
		return err
	}
	s.servers[victim] = srv
	for {
		if _, _, err := c.Do(ctx, http.MethodGet, srv.Base+"/ready", nil, http.StatusOK); err == nil {
			break
		}
		if time.Since(start) > 3*time.Minute {
			return fmt.Errorf("restarted replica not ready within 3 minutes")
		}
		time.Sleep(100 * time.Millisecond)
	}
	fmt.Printf("\nrestart: replica %d again on %s with search.warmWindow 24h and warmReady: /ready 200 after %s\n",
		victim, addr, time.Since(start).Round(100*time.Millisecond))
	samples = load(ctx, c, s.base, o, o.d, 30)
	loaded := map[string]int{}
	for _, x := range samples {
		if x.loaded {
			loaded[x.replica]++
		}
	}
	fmt.Printf("  %d searches through the proxy after it; searches that loaded an index, by replica: %v\n", len(samples), loaded)
	if err := filled(ctx, c, s.servers); err != nil {
		return err
	}
	ms = nil
	for _, srv := range s.servers {
		m, err := memoryOf(ctx, c, srv)
		if err != nil {
			return err
		}
		ms = append(ms, m)
	}
	printMemory("restarted", 0, ms)
	fmt.Printf("load average %s\n", probe.LoadAverage())
	return nil
}
