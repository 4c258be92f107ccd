// Command replicadelay measures how long a write made through one agentcards server takes to be
// found through a second one on the same Postgres database: it builds the binary, starts two
// `serve` processes on a fresh schema, changes a card on A and polls a search on B until the
// change shows, many times; once with LISTEN/NOTIFY (the default) and once with polling only.
//
//	go run ./bench/replicadelay -dsn 'postgres://postgres@127.0.0.1:5432/test?sslmode=disable' -n 100
package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/agentcards/agentcards/bench/internal/proc"

	_ "github.com/jackc/pgx/v5/stdlib"
)

func main() {
	dsn := flag.String("dsn", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable", "Postgres database to create a scratch schema in")
	n := flag.Int("n", 100, "writes per mode")
	poll := flag.Duration("poll", 500*time.Millisecond, "search.pollInterval")
	flag.Parse()

	work, err := os.MkdirTemp("", "agentcards-replicadelay")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(work)
	bin, err := proc.Build(work)
	if err != nil {
		log.Fatal(err)
	}
	db, err := sql.Open("pgx", *dsn)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	fmt.Printf("%-16s %8s %10s %10s %10s\n", "mode", "writes", "p50", "p99", "max")
	for _, listen := range []bool{true, false} {
		schema := fmt.Sprintf("replicadelay_%d", time.Now().UnixNano())
		if _, err := db.Exec("CREATE SCHEMA " + schema); err != nil {
			log.Fatal(err)
		}
		delays := run(bin, work, withSearchPath(*dsn, schema), listen, *poll, *n)
		if _, err := db.Exec("DROP SCHEMA " + schema + " CASCADE"); err != nil {
			log.Print(err)
		}
		slices.Sort(delays)
		mode := "listen+poll"
		if !listen {
			mode = "poll " + poll.String()
		}
		fmt.Printf("%-16s %8d %10s %10s %10s\n", mode, len(delays), delays[len(delays)/2].Round(time.Microsecond),
			delays[len(delays)*99/100].Round(time.Microsecond), delays[len(delays)-1].Round(time.Microsecond))
	}
}

func withSearchPath(dsn, schema string) string {
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + "search_path=" + schema
}

func run(bin, work, dsn string, listen bool, poll time.Duration, n int) []time.Duration {
	dir, err := os.MkdirTemp(work, "data")
	if err != nil {
		log.Fatal(err)
	}
	env := proc.Env(
		"AGENTCARDS_DATABASE_DRIVER=postgres", "AGENTCARDS_DATABASE_DSN="+dsn,
		"AGENTCARDS_AUTH_SECRET=replicadelay-shared-secret-0123456789abcdef",
		fmt.Sprintf("AGENTCARDS_SEARCH_LISTEN=%v", listen), "AGENTCARDS_SEARCH_POLL_INTERVAL="+poll.String())
	a, err := proc.Start(bin, dir, env)
	if err != nil {
		log.Fatal(err)
	}
	defer a.Stop()
	b, err := proc.Start(bin, dir, env) // same data dir: the same signing key
	if err != nil {
		log.Fatal(err)
	}
	defer b.Stop()
	token, err := proc.Token(bin, dir, env)
	if err != nil {
		log.Fatal(err)
	}
	call := func(method, url string, body any) map[string]any {
		var rd io.Reader
		if body != nil {
			j, _ := json.Marshal(body)
			rd = bytes.NewReader(j)
		}
		req, _ := http.NewRequestWithContext(context.Background(), method, url, rd)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		defer res.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(res.Body).Decode(&m)
		if res.StatusCode >= 300 {
			log.Fatalf("%s %s: %d %v", method, url, res.StatusCode, m)
		}
		return m
	}
	call("POST", a.Base+"/v1/tenants", map[string]any{"id": "bench", "name": "Bench"})
	call("POST", a.Base+"/v1/tenants/bench/cards", map[string]any{"agentId": "agt", "name": "Agent", "description": "start"})
	call("GET", b.Base+"/v1/tenants/bench/cards?q=start", nil) // B builds its index now
	var delays []time.Duration
	for i := 0; i < n; i++ {
		word := fmt.Sprintf("word%dx%d", time.Now().UnixNano()%1e6, i)
		call("PATCH", a.Base+"/v1/tenants/bench/cards/agt", map[string]any{"description": word})
		t0 := time.Now()
		for {
			if res := call("GET", b.Base+"/v1/tenants/bench/cards?q="+word, nil); res["total"] == float64(1) {
				break
			}
			if time.Since(t0) > 10*time.Second {
				log.Fatalf("write %d not seen on B after 10s", i)
			}
			time.Sleep(time.Millisecond)
		}
		delays = append(delays, time.Since(t0))
	}
	return delays
}
