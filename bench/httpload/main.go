// Command httpload measures the search endpoint against a trivial JSON endpoint (/health) of the
// same agentcards server, with the same load generator in the same run, and prints the
// throughput ratio. It builds and starts the real binary on a loopback port with a temporary
// SQLite database, registers generated cards over HTTP, then alternates rounds of closed-loop
// load on the two endpoints.
//
//	go run ./bench/httpload -cards 10000 -c 16 -d 5s -rounds 3
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentcards/agentcards/bench/internal/proc"

	"github.com/agentcards/agentcards/bench/cardgen"
)

func main() {
	n := flag.Int("cards", 10000, "cards to register")
	conc := flag.Int("c", 16, "concurrent clients")
	dur := flag.Duration("d", 5*time.Second, "length of one round")
	rounds := flag.Int("rounds", 3, "rounds per endpoint, alternating")
	limit := flag.Int("limit", 10, "the search's limit (page size)")
	useWrk := flag.Bool("wrk", false, "load with wrk (Debian package wrk) instead of the Go client")
	hold := flag.Bool("hold", false, "set up, print the URLs and token, and wait (for profiling by hand) instead of loading")
	flag.Parse()

	work, err := os.MkdirTemp("", "agentcards-httpload")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(work)
	bin, err := proc.Build(work)
	if err != nil {
		log.Fatal(err)
	}
	env := proc.Env()
	srv, err := proc.Start(bin, work, env)
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Stop()
	base := srv.Base
	token, err := proc.Token(bin, work, env)
	if err != nil {
		log.Fatal(err)
	}

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *conc * 2}}
	call := func(method, path string, body []byte) int {
		req, _ := http.NewRequest(method, base+path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		res, err := client.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode
	}
	if s := call("POST", "/v1/tenants", []byte(`{"id":"bench","name":"Bench"}`)); s != 201 {
		log.Fatalf("create tenant: %d", s)
	}
	t0 := time.Now()
	docs := cardgen.Documents(42, *n)
	var wg sync.WaitGroup
	next := make(chan []byte)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for d := range next {
				if s := call("POST", "/v1/tenants/bench/cards", d); s != 201 {
					log.Fatalf("register: %d", s)
				}
			}
		}()
	}
	for _, d := range docs {
		next <- d
	}
	close(next)
	wg.Wait()
	fmt.Printf("registered %d cards in %s\n", *n, time.Since(t0).Round(time.Millisecond))

	search := "/v1/tenants/bench/cards?limit=" + fmt.Sprint(*limit) + "&capability=" + url.QueryEscape(cardgen.Make(42, *n/2).Capabilities[0].Name)
	call("GET", search, nil) // builds the index
	endpoints := []struct{ name, path string }{{"health", "/health"}, {"search", search}}
	if *hold {
		fmt.Printf("pid %d\nhealth %s/health\nsearch %s%s\ntoken %s\n", srv.Pid(), base, base, search, token)
		select {}
	}
	if *useWrk {
		rps := map[string]float64{}
		for r := 0; r < *rounds; r++ {
			for _, ep := range endpoints {
				rps[ep.name] += wrk(base+ep.path, token, *conc, *dur)
			}
		}
		fmt.Printf("\nwrk: health %.0f req/s, search %.0f req/s\nsearch/health throughput ratio: %.2f (wrk, limit %d, %d connections, %d cards, %d x %s rounds each)\n",
			rps["health"]/float64(*rounds), rps["search"]/float64(*rounds), rps["search"]/rps["health"], *limit, *conc, *n, *rounds, *dur)
		return
	}
	results := map[string][]time.Duration{}
	count := map[string]int{}
	elapsed := map[string]time.Duration{}
	for r := 0; r < *rounds; r++ {
		for _, ep := range endpoints {
			lat, done, took := load(client, base+ep.path, token, *conc, *dur)
			results[ep.name] = append(results[ep.name], lat...)
			count[ep.name] += done
			elapsed[ep.name] += took
		}
	}
	rps := map[string]float64{}
	fmt.Printf("\n%-8s %10s %10s %10s\n", "endpoint", "req/s", "p50", "p99")
	for _, ep := range endpoints {
		lat := results[ep.name]
		slices.Sort(lat)
		rps[ep.name] = float64(count[ep.name]) / elapsed[ep.name].Seconds()
		fmt.Printf("%-8s %10.0f %10s %10s\n", ep.name, rps[ep.name], lat[len(lat)/2].Round(time.Microsecond), lat[len(lat)*99/100].Round(time.Microsecond))
	}
	fmt.Printf("\nsearch/health throughput ratio: %.2f (limit %d, %d clients, %d cards, %d x %s rounds each)\n",
		rps["search"]/rps["health"], *limit, *conc, *n, *rounds, *dur)
}

// load runs conc clients in a closed loop against url for d and returns every latency.
func load(client *http.Client, url, token string, conc int, d time.Duration) ([]time.Duration, int, time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var mu sync.Mutex
	var all []time.Duration
	var wg sync.WaitGroup
	start := time.Now()
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for ctx.Err() == nil {
				req, _ := http.NewRequest("GET", url, nil)
				req.Header.Set("Authorization", "Bearer "+token)
				t0 := time.Now()
				res, err := client.Do(req)
				if err != nil {
					log.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode != 200 {
					log.Fatalf("%s: %d", url, res.StatusCode)
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return all, len(all), time.Since(start)
}

// wrk runs one round of wrk against url and returns its requests per second.
func wrk(url, token string, conns int, d time.Duration) float64 {
	out, err := exec.Command("wrk", "-t2", fmt.Sprintf("-c%d", conns), "-d"+d.String(),
		"-H", "Authorization: Bearer "+token, url).CombinedOutput()
	if err != nil {
		log.Fatalf("wrk: %v: %s", err, out)
	}
	m := regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`).FindSubmatch(out)
	if m == nil || strings.Contains(string(out), "Non-2xx") {
		log.Fatalf("wrk output: %s", out)
	}
	var v float64
	fmt.Sscan(string(m[1]), &v)
	return v
}
