package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentcards/agentcards/migrations"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/web/webtest"
)

// served is a `serve` the test runs: its API and its log.
type served struct {
	api webtest.Client
	log *webtest.LogBuffer
	out *webtest.LogBuffer // what serve printed
}

// serveConfig is the YAML of a server on a loopback port with its own data directory, over the
// database dialect/dsn, with the HS256 secret of webtest's tokens and search set to the YAML
// lines given.
func serveConfig(t *testing.T, dialect, dsn string, search ...string) string {
	return fmt.Sprintf("dataDir: %q\nserver:\n  addr: 127.0.0.1:0\n  metricsAddr: 127.0.0.1:0\ndatabase:\n  driver: %s\n  dsn: %q\nauth:\n  secret: %q\nsearch:\n  %s\n",
		t.TempDir(), dialect, dsn, webtest.Secret, strings.Join(search, "\n  "))
}

// startServe runs the real serve command with config until the test ends, and returns once it
// listens.
func startServe(t *testing.T, config string) served {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stdout, stderr := &webtest.LogBuffer{}, &webtest.LogBuffer{}
	stopped := make(chan struct{})
	var err error
	go func() {
		defer close(stopped)
		err = run(ctx, []string{"serve", "--config", path}, stdout, stderr, nil)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-stopped:
			if err != nil {
				t.Errorf("serve: %v\n%s", err, stderr)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("serve did not stop\n%s", stderr)
		}
	})
	listening := regexp.MustCompile(`listening on (http://\S+)`)
	deadline := time.After(60 * time.Second)
	for {
		if m := listening.FindStringSubmatch(stdout.String()); m != nil {
			return served{api: webtest.Client{BaseURL: m[1]}, log: stderr, out: stdout}
		}
		select {
		case <-stopped:
			t.Fatalf("serve stopped: %v\n%s", err, stderr)
		case <-deadline:
			t.Fatalf("serve does not listen\n%s", stderr)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// createCard registers a card with capability review_pr and the given description.
func createCard(t *testing.T, s served, token, tenant, agentID, description string) {
	t.Helper()
	r := s.api.Do(t, http.MethodPost, "/v1/tenants/"+tenant+"/cards", token, map[string]any{
		"agentId": agentID, "name": "Agent " + agentID, "description": description, "protocols": []string{"http"},
		"endpoint": "https://agents.example.com/" + agentID, "capabilities": []any{map[string]any{"name": "review_pr"}},
	})
	webtest.Expect(t, r, http.StatusCreated)
}

// searchReviewers returns the agents that the server finds for "pull requests", sorted.
func searchReviewers(t *testing.T, s served, token, tenant string) string {
	t.Helper()
	r := s.api.Do(t, http.MethodGet, "/v1/tenants/"+tenant+"/cards?q=pull+requests", token, nil)
	webtest.Expect(t, r, http.StatusOK)
	var page struct {
		Items []struct {
			Card struct {
				AgentID string `json:"agentId"`
			} `json:"card"`
		} `json:"items"`
		Total int `json:"total"`
	}
	r.JSON(t, &page)
	ids := []string{}
	for _, it := range page.Items {
		ids = append(ids, it.Card.AgentID)
	}
	if page.Total != len(ids) {
		t.Fatalf("total %d for %d items: %s", page.Total, len(ids), r.Body)
	}
	slices.Sort(ids)
	return strings.Join(ids, " ")
}

// followLine is what serve logs when it follows the change feed with LISTEN/NOTIFY.
const followLine = "following the change feed with LISTEN/NOTIFY"

// TestServeSearchIndexNone: with search.index none every search reads the database, so a card
// that a second server writes into the same database is found by the first at once, though the
// poll interval is an hour; and no follower of an index starts (on Postgres the live streams of
// the change feed LISTEN, and say so in a line of their own). The control,
// with the memory index, no LISTEN and the same hour, misses it: the difference is the setting.
func TestServeSearchIndexNone(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		_, dsn := storagetest.EmptyDatabase(t, dialect)
		root := webtest.Mint(t, webtest.Tokens(t), "root", "", true)
		scenario := func(search ...string) (first, second served, seen string) {
			t.Helper()
			first = startServe(t, serveConfig(t, dialect, dsn, search...))
			second = startServe(t, serveConfig(t, dialect, dsn, search...))
			tenant := "t" + strings.ReplaceAll(search[0], ": ", "-") // one tenant per scenario
			first.api.CreateTenant(t, root, tenant, "alice")
			createCard(t, first, root, tenant, "reviewer-a", "Reviews pull requests")
			createCard(t, first, root, tenant, "translator", "Translates documents")
			if got := searchReviewers(t, first, root, tenant); got != "reviewer-a" {
				t.Fatalf("%v: search on the writing server: %q", search, got)
			}
			createCard(t, second, root, tenant, "reviewer-b", "Reviews pull requests")
			return first, second, searchReviewers(t, first, root, tenant)
		}

		first, second, seen := scenario("index: none", "pollInterval: 1h", "listen: true")
		if seen != "reviewer-a reviewer-b" {
			t.Errorf("search.index none: the first server found %q at once, want both reviewers", seen)
		}
		for i, s := range []served{first, second} {
			if log := s.log.String(); strings.Contains(log, "following the change feed") || strings.Contains(log, "change-feed listener") {
				t.Errorf("search.index none: server %d follows the change feed:\n%s", i, log)
			}
		}

		first, _, seen = scenario("index: memory", "pollInterval: 1h", "listen: false")
		if seen != "reviewer-a" {
			t.Errorf("control, memory index polled hourly: the first server found %q, want its own card only", seen)
		}
		if strings.Contains(first.log.String(), followLine) {
			t.Errorf("search.listen false, yet:\n%s", first.log)
		}
	})
}

// TestServeFollowsWithListen: with the memory index and search.listen true, on Postgres serve
// follows the change feed with LISTEN/NOTIFY: a card written by a second server over the same
// database is found by the first within seconds, with a poll interval of an hour. On SQLite and
// MySQL, which have no LISTEN, serve polls without logging either a follower or a failure.
func TestServeFollowsWithListen(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		_, dsn := storagetest.EmptyDatabase(t, dialect)
		search := []string{"index: memory", "pollInterval: 1h", "listen: true"}
		first := startServe(t, serveConfig(t, dialect, dsn, search...))
		if dialect != migrations.Postgres {
			if log := first.log.String(); strings.Contains(log, followLine) || strings.Contains(log, "listener") {
				t.Errorf("%s has no LISTEN, yet:\n%s", dialect, log)
			}
			return
		}
		if log := first.log.String(); !strings.Contains(log, followLine) || !strings.Contains(log, "interval=1h0m0s") {
			t.Fatalf("no %q with the configured interval in the log:\n%s", followLine, log)
		}
		second := startServe(t, serveConfig(t, dialect, dsn, search...))
		root := webtest.Mint(t, webtest.Tokens(t), "root", "", true)
		first.api.CreateTenant(t, root, "acme", "alice")
		createCard(t, first, root, "acme", "reviewer-a", "Reviews pull requests")
		if got := searchReviewers(t, first, root, "acme"); got != "reviewer-a" { // loads the index
			t.Fatalf("search on the writing server: %q", got)
		}
		createCard(t, second, root, "acme", "reviewer-b", "Reviews pull requests")
		start := time.Now()
		webtest.Eventually(t, 10*time.Second, "the first server finds the second's card", func() bool {
			return searchReviewers(t, first, root, "acme") == "reviewer-a reviewer-b"
		})
		t.Logf("found after %s", time.Since(start))
	})
}

// TestServeResyncsAfterListenerCut: when a server's LISTEN connection is cut, a card another
// server writes before the LISTEN is back (its NOTIFY reaches nobody) is still found by the
// first server's index, with polling an hour away: serve resyncs the loaded tenants each time
// its LISTEN is re-established.
func TestServeResyncsAfterListenerCut(t *testing.T) {
	_, dsn := storagetest.EmptyDatabase(t, migrations.Postgres)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	schema := u.Query().Get("search_path")
	first := startServe(t, serveConfig(t, migrations.Postgres, dsn, "index: memory", "pollInterval: 1h", "listen: true"))
	second := startServe(t, serveConfig(t, migrations.Postgres, dsn, "index: memory", "pollInterval: 1h", "listen: false"))
	root := webtest.Mint(t, webtest.Tokens(t), "root", "", true)
	first.api.CreateTenant(t, root, "acme", "alice")
	createCard(t, first, root, "acme", "reviewer-a", "Reviews pull requests")
	if got := searchReviewers(t, first, root, "acme"); got != "reviewer-a" { // loads the index
		t.Fatalf("search on the writing server: %q", got)
	}
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var cut int
	err = admin.QueryRow("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1",
		storage.ListenApplication(schema)).Scan(&cut)
	if err != nil || cut != 1 {
		t.Fatalf("cut %d listeners of schema %s: %v", cut, schema, err)
	}
	// The listener waits a second before it connects again: this write falls in the gap.
	createCard(t, second, root, "acme", "reviewer-b", "Reviews pull requests")
	webtest.Eventually(t, 15*time.Second, "the first server finds the card written while its LISTEN was down", func() bool {
		return searchReviewers(t, first, root, "acme") == "reviewer-a reviewer-b"
	})
	if !strings.Contains(first.log.String(), "change-feed listener") {
		t.Errorf("the cut was not logged:\n%s", first.log.String())
	}
}

// TestServeBoundsSlowBodies: a client that announces a body and then trickles it (or stops)
// cannot hold a connection: reading a request, body included, is bounded by
// server.requestTimeout, also for an unauthenticated request answered before its body is read
// (the server would otherwise wait for the rest of the body to reuse the connection).
func TestServeBoundsSlowBodies(t *testing.T) {
	_, dsn := storagetest.EmptyDatabase(t, migrations.SQLite)
	config := strings.Replace(serveConfig(t, migrations.SQLite, dsn, "index: memory"), "server:\n", "server:\n  requestTimeout: 1s\n", 1)
	s := startServe(t, config)
	u, err := url.Parse(s.api.BaseURL)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		token   string
		trickle bool
	}{{"", false}, {webtest.Mint(t, webtest.Tokens(t), "root", "", true), false}, {"", true}} {
		token := c.token
		conn, err := net.Dial("tcp", u.Host)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		auth := ""
		if token != "" {
			auth = "Authorization: Bearer " + token + "\r\n"
		}
		start := time.Now()
		_, err = fmt.Fprintf(conn, "POST /v1/tenants HTTP/1.1\r\nHost: %s\r\n%sContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{", u.Host, auth)
		if err != nil {
			t.Fatal(err)
		}
		if c.trickle { // a byte every 100 ms: each read succeeds, the whole takes for ever
			stopTrickle := make(chan struct{})
			defer close(stopTrickle)
			go func() {
				for {
					select {
					case <-stopTrickle:
						return
					case <-time.After(100 * time.Millisecond):
						if _, err := conn.Write([]byte(" ")); err != nil {
							return
						}
					}
				}
			}()
		}
		// Whatever the server answers, it must then close the connection, long before this
		// deadline; a server that waits for the body keeps it open until the deadline.
		if err := conn.SetReadDeadline(time.Now().Add(20 * time.Second)); err != nil {
			t.Fatal(err)
		}
		_, err = io.Copy(io.Discard, conn)
		if err != nil {
			t.Fatalf("token %t, trickle %t: the connection was still open after %s: %v", token != "", c.trickle, time.Since(start).Round(time.Millisecond), err)
		}
		t.Logf("token %t, trickle %t: closed after %s", token != "", c.trickle, time.Since(start).Round(time.Millisecond))
	}
}
