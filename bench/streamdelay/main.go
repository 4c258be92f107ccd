// Command streamdelay measures the live stream of the change feed (GET cards:changes with
// Accept: text/event-stream) on the real binary: the time from a write's 2xx to its event on a
// stream, with 1 stream and with many streams of one tenant open (at -rate writes/s), and the
// memory one idle stream costs the server. It builds the binary and runs `serve` on SQLite in a
// temporary directory; with -dsn (Postgres) it also runs two servers on one database and times a
// write on A to its event on a stream of B. Last, with no server, it measures the socket floor
// under the many-streams run: one 1 KB line written to as many loopback connections, each read
// by a goroutine of the bench, timed until the last reader has it.
//
//	go run ./bench/streamdelay -streams 1000 -writes 200 -rate 10
package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentcards/agentcards/bench/internal/proc"

	_ "github.com/jackc/pgx/v5/stdlib"
)

func main() {
	streams := flag.Int("streams", 1000, "streams of the many-streams run (search.streams.perTenant is raised to fit)")
	writes := flag.Int("writes", 200, "writes timed per run")
	rate := flag.Float64("rate", 10, "writes per second")
	dsn := flag.String("dsn", "", "a Postgres database: also time a write on replica A to its event on a stream of replica B")
	flag.Parse()

	work, err := os.MkdirTemp("", "agentcards-streamdelay")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(work)
	bin, err := proc.Build(work)
	if err != nil {
		log.Fatal(err)
	}
	env := proc.Env(
		"AGENTCARDS_AUTH_SECRET=streamdelay-shared-secret-0123456789abcdef",
		"AGENTCARDS_SEARCH_STREAMS_PER_TENANT="+strconv.Itoa(*streams+10), "AGENTCARDS_SEARCH_STREAMS_PER_REPLICA="+strconv.Itoa(*streams+10))
	dir := mkdir(work, "sqlite")
	s, err := proc.Start(bin, dir, env)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Stop()
	token, err := proc.Token(bin, dir, env)
	if err != nil {
		log.Fatal(err)
	}
	b := &bench{token: token, a: s.Base, b: s.Base}
	b.call("POST", s.Base+"/v1/tenants", map[string]any{"id": "bench", "name": "Bench"})
	b.call("POST", s.Base+"/v1/tenants/bench/cards", map[string]any{"agentId": "agt", "name": "Agent", "description": "start"})

	// Memory first, on a server that has served no stream: the Go runtime keeps what it freed.
	time.Sleep(time.Second)
	before := rss(s.Pid())
	idle := b.open(*streams, nil)
	time.Sleep(2 * time.Second) // let the server's goroutines settle
	after := rss(s.Pid())
	fmt.Printf("memory per idle stream: %.1f KB (server RSS %d MB -> %d MB with %d streams)\n",
		float64(after-before)/float64(*streams)/1024, before>>20, after>>20, *streams)
	idle.close()

	fmt.Printf("%-28s %8s %10s %10s %10s\n", "run (SQLite)", "events", "p50", "p99", "max")
	one := b.timed(1, *writes, *rate)
	b.report("1 stream", one)
	many := b.timed(*streams, *writes, *rate)
	b.report(fmt.Sprintf("%d streams", *streams), many)
	fmt.Printf("p99 ratio, %d streams / 1 stream: %.2f\n", *streams, float64(pct(many, 99))/float64(pct(one, 99)))
	// The floor under the many-streams run: what sockets alone cost to carry one event to every
	// stream, with no server.
	f1, fn := socketFloor(1, *writes), socketFloor(*streams, *writes)
	fmt.Printf("socket floor (one 1 KB write to each loopback connection, a reader each; the last reader):\n"+
		"  1 connection p50 %s p99 %s; %d connections p50 %s p99 %s\n",
		pct(f1, 50).Round(time.Microsecond), pct(f1, 99).Round(time.Microsecond), *streams, pct(fn, 50).Round(time.Microsecond), pct(fn, 99).Round(time.Microsecond))

	if *dsn != "" {
		b.replicas(bin, work, env, *dsn, *writes, *rate)
	}
}

// bench is one run's servers: writes go to a, streams read b.
type bench struct {
	token string
	a, b  string
}

func (b *bench) call(method, url string, body any) {
	var rd io.Reader
	if body != nil {
		j, _ := json.Marshal(body)
		rd = bytes.NewReader(j)
	}
	req, _ := http.NewRequestWithContext(context.Background(), method, url, rd)
	req.Header.Set("Authorization", "Bearer "+b.token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	if res.StatusCode >= 300 {
		log.Fatalf("%s %s: %d %s", method, url, res.StatusCode, data)
	}
}

// streamSet is streams open on b, each reading its events; seen is told of each change event's
// arrival (the stream's index and the event's data), if set.
type streamSet struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func (s *streamSet) close() {
	s.cancel()
	s.wg.Wait()
}

// open opens n streams from now on and returns once each has had its ready event.
func (b *bench) open(n int, seen func(i int, data string, at time.Time)) *streamSet {
	ctx, cancel := context.WithCancel(context.Background())
	set := &streamSet{cancel: cancel}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: 0}}
	ready := make(chan struct{}, n)
	for i := range n {
		set.wg.Add(1)
		go func() {
			defer set.wg.Done()
			req, _ := http.NewRequestWithContext(ctx, "GET", b.b+"/v1/tenants/bench/cards:changes", nil)
			req.Header.Set("Authorization", "Bearer "+b.token)
			req.Header.Set("Accept", "text/event-stream")
			res, err := client.Do(req)
			if err != nil {
				if ctx.Err() == nil {
					log.Fatal(err)
				}
				return
			}
			defer res.Body.Close()
			if res.StatusCode != http.StatusOK {
				log.Fatalf("stream %d: %d", i, res.StatusCode)
			}
			r := bufio.NewReader(res.Body)
			name := ""
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					return
				}
				switch {
				case strings.HasPrefix(line, "event: "):
					name = strings.TrimSpace(line[7:])
				case strings.HasPrefix(line, "data: ") && name == "ready":
					ready <- struct{}{}
				case strings.HasPrefix(line, "data: ") && name == "change" && seen != nil:
					seen(i, line[6:], time.Now())
				}
			}
		}()
	}
	for range n {
		select {
		case <-ready:
		case <-time.After(60 * time.Second):
			log.Fatal("the streams did not open within a minute")
		}
	}
	return set
}

// timed opens n streams, writes at rate, and returns, for each write, the delay from its 2xx to
// its event on each stream.
func (b *bench) timed(n, writes int, rate float64) []time.Duration {
	var mu sync.Mutex
	arrived := map[string][]time.Time{} // by description
	set := b.open(n, func(_ int, data string, at time.Time) {
		// The write's word, found without decoding the card: the readers share the bench's
		// cores with the server.
		_, rest, ok := strings.Cut(data, `"description":"`)
		word, _, ok2 := strings.Cut(rest, `"`)
		if !ok || !ok2 {
			return
		}
		mu.Lock()
		arrived[word] = append(arrived[word], at)
		mu.Unlock()
	})
	defer set.close()
	answered := map[string]time.Time{}
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	for i := range writes {
		<-tick.C
		word := fmt.Sprintf("w%d-%d", n, i)
		b.call("PATCH", b.a+"/v1/tenants/bench/cards/agt", map[string]any{"description": word})
		answered[word] = time.Now()
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		done := 0
		for w := range answered {
			if len(arrived[w]) >= n {
				done++
			}
		}
		mu.Unlock()
		if done == len(answered) || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	var delays []time.Duration
	missing := 0
	for w, at := range answered {
		missing += n - len(arrived[w])
		for _, got := range arrived[w] {
			// An event may arrive before its writer has read the answer: no delay then.
			delays = append(delays, max(got.Sub(at), 0))
		}
	}
	if missing > 0 {
		log.Printf("%d events did not arrive within 10 s", missing)
	}
	slices.Sort(delays)
	return delays
}

func (b *bench) report(run string, d []time.Duration) {
	fmt.Printf("%-28s %8d %10s %10s %10s\n", run, len(d), pct(d, 50).Round(time.Microsecond), pct(d, 99).Round(time.Microsecond),
		d[len(d)-1].Round(time.Microsecond))
}

func pct(d []time.Duration, p int) time.Duration { return d[(len(d)-1)*p/100] }

// replicas times a write on replica A to its event on a stream of replica B, two servers on one
// Postgres schema.
func (b *bench) replicas(bin, work string, env []string, dsn string, writes int, rate float64) {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	schema := fmt.Sprintf("streamdelay_%d", time.Now().UnixNano())
	if _, err := db.Exec("CREATE SCHEMA " + schema); err != nil {
		log.Fatal(err)
	}
	defer func() { _, _ = db.Exec("DROP SCHEMA " + schema + " CASCADE") }()
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	env = append(env, "AGENTCARDS_DATABASE_DRIVER=postgres", "AGENTCARDS_DATABASE_DSN="+dsn+sep+"search_path="+schema)
	dir := mkdir(work, "postgres")
	a, err := proc.Start(bin, dir, env)
	if err != nil {
		log.Fatal(err)
	}
	defer a.Stop()
	bs, err := proc.Start(bin, dir, env) // same data dir: the same keys
	if err != nil {
		log.Fatal(err)
	}
	defer bs.Stop()
	pb := &bench{token: b.token, a: a.Base, b: bs.Base}
	if pb.token, err = proc.Token(bin, dir, env); err != nil {
		log.Fatal(err)
	}
	pb.call("POST", a.Base+"/v1/tenants", map[string]any{"id": "bench", "name": "Bench"})
	pb.call("POST", a.Base+"/v1/tenants/bench/cards", map[string]any{"agentId": "agt", "name": "Agent", "description": "start"})
	fmt.Printf("%-28s %8s %10s %10s %10s\n", "run (Postgres, 2 replicas)", "events", "p50", "p99", "max")
	pb.report("write on A, stream on B", pb.timed(1, writes, rate))
	same := &bench{token: pb.token, a: a.Base, b: a.Base}
	same.report("write on A, stream on A", same.timed(1, writes, rate))
}

func mkdir(work, name string) string {
	dir, err := os.MkdirTemp(work, name)
	if err != nil {
		log.Fatal(err)
	}
	return dir
}

// rss is the resident memory of the process, in bytes.
func rss(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		log.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	log.Fatal("no VmRSS")
	return 0
}

// socketFloor opens n loopback TCP connections and, rounds times, writes one 1 KB line to each
// (a writer goroutine per connection, as each stream writes its own) while a reader goroutine per
// connection reads it: the time from the writes' start until the last reader has the line. It is
// what carrying one event to n streams costs without a server, on the same cores.
func socketFloor(n, rounds int) []time.Duration {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer ln.Close()
	writers := make([]net.Conn, n)
	readers := make([]*bufio.Reader, n)
	for i := range n {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			log.Fatal(err)
		}
		defer c.Close()
		if writers[i], err = ln.Accept(); err != nil {
			log.Fatal(err)
		}
		defer writers[i].Close()
		readers[i] = bufio.NewReader(c)
	}
	line := append(bytes.Repeat([]byte("x"), 1023), '\n')
	wake := make([]chan struct{}, n)
	for i := range n {
		wake[i] = make(chan struct{}, 1)
		go func() {
			for range wake[i] {
				_, _ = writers[i].Write(line)
			}
		}()
		defer close(wake[i])
	}
	lat := make([]time.Duration, 0, rounds)
	for range rounds {
		var wg sync.WaitGroup
		var mu sync.Mutex
		last := time.Duration(0)
		start := time.Now()
		for i := range n {
			wg.Go(func() {
				if _, err := readers[i].ReadBytes('\n'); err != nil {
					log.Fatal(err)
				}
				d := time.Since(start)
				mu.Lock()
				last = max(last, d)
				mu.Unlock()
			})
		}
		for i := range n {
			wake[i] <- struct{}{}
		}
		wg.Wait()
		lat = append(lat, last)
		time.Sleep(5 * time.Millisecond)
	}
	slices.Sort(lat)
	return lat
}
