package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentcards/agentcards/migrations"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/web"
	"github.com/agentcards/agentcards/web/mcp"
	"github.com/agentcards/agentcards/web/webtest"
)

// TestOutageStartsAndEndsOnce: under a steady load of reads, writes and readiness probes, a
// database that goes away and comes back makes one outage, as the gate sees it and as the log
// says it (one "does not answer", one "answers again"): from the moment it is found down every
// read that memory answers is marked stale (the public agent list included; the read that finds
// it down is answered from memory too) and no probe says
// ready (the MCP door passes the mark on); from the moment a ping finds it back, no write is
// refused and nothing is marked. On
// Postgres and MySQL with the connection cut by a relay, and on a private Postgres server
// stopped and started.
func TestOutageStartsAndEndsOnce(t *testing.T) {
	for _, name := range []string{"postgres", "mysql", "postgres-stopped"} {
		t.Run(name, func(t *testing.T) {
			var db *storage.DB
			var down, up func()
			switch name {
			case "postgres-stopped":
				pg := storagetest.StartPrivatePostgres(t)
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				var err error
				if db, err = storage.Open(ctx, migrations.Postgres, pg.DSN); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = db.Close() })
				if err := db.Migrate(ctx); err != nil {
					t.Fatal(err)
				}
				down, up = pg.Stop, pg.Start
			default:
				var outage *storagetest.Outage
				db, outage = storagetest.OpenWithOutage(t, name)
				down, up = outage.Down, outage.Up
			}
			testOutageOnce(t, db, down, up)
		})
	}
}

// outageCall is one request of the load and what it met.
type outageCall struct {
	kind         string // "read", "write" or "ready"
	what         string
	start, end   time.Time
	status       int
	stale, store bool // marked stale; Cache-Control: no-store
}

func testOutageOnce(t *testing.T, db *storage.DB, down, up func()) {
	var logged webtest.LogBuffer
	e := newEnvWith(t, db, envOptions{follow: true, log: slog.New(slog.NewTextHandler(&logged, nil))})
	gate := watchGate(e)
	alice := publicCardsInMemory(t, e)

	load := startOutageLoad(e, alice)
	t.Cleanup(func() { load.stop() }) // also when the test stops early
	time.Sleep(time.Second)
	down()
	cut := time.Now()
	time.Sleep(2 * time.Second)
	checkMCPMarksStale(t, e, alice)
	time.Sleep(time.Second)
	up()
	back := time.Now()
	webtest.Eventually(t, 15*time.Second, "the outage ended", func() bool {
		_, ups := gate.times()
		return len(ups) > 0
	})
	time.Sleep(time.Second)
	calls := load.stop()

	downs, ups := gate.times()
	if len(downs) != 1 || len(ups) != 1 {
		t.Fatalf("the gate found the database down %d times and back %d times in one outage", len(downs), len(ups))
	}
	log := logged.String()
	if n, m := strings.Count(log, "the database does not answer"), strings.Count(log, "the database answers again"); n != 1 || m != 1 {
		t.Errorf("one outage said %d times and its end %d times:\n%s", n, m, log)
	}
	foundDown, foundUp := downs[0], ups[0]
	if late := foundUp.Sub(back); late > 3*time.Second {
		t.Errorf("the database was found back %s after it was", late)
	}
	checkOutageCalls(t, calls, cut, foundDown, foundUp)
}

// gateTimes are the moments the gate of an env found the database down and back.
type gateTimes struct {
	mu         sync.Mutex
	downs, ups []time.Time
}

// watchGate records the moments e's gate finds the database down and back.
func watchGate(e *env) *gateTimes {
	g := &gateTimes{}
	e.gate.OnDown(func(error) { g.mu.Lock(); g.downs = append(g.downs, time.Now()); g.mu.Unlock() })
	e.gate.OnAnswer(func() { g.mu.Lock(); g.ups = append(g.ups, time.Now()); g.mu.Unlock() })
	return g
}

// times answers the moments recorded so far.
func (g *gateTimes) times() (downs, ups []time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.downs), slices.Clone(g.ups)
}

// publicCardsInMemory creates tenant acme with three public cards, agt1 to agt3, loads its
// index and waits for the outage copy to hold them; it answers the token of alice, its admin.
func publicCardsInMemory(t *testing.T, e *env) string {
	e.mkTenant("acme", "alice")
	alice := e.token("alice", "acme", false)
	for _, id := range []string{"agt1", "agt2", "agt3"} {
		card := sampleCard(id)
		card["visibility"] = "public"
		expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, card), http.StatusCreated)
	}
	expect(t, e.do("GET", "/v1/tenants/acme/cards?q=review", alice, nil), http.StatusOK) // loads the index
	webtest.Eventually(t, 10*time.Second, "the outage copy filled", func() bool {
		sizes := e.index.Sizes()
		return len(sizes) == 1 && sizes[0].CopyCards == 3
	})
	return alice
}

// outageRequest is one request of the load: its kind ("read", "write" or "ready") and itself.
type outageRequest struct{ kind, method, path, body string }

// outageRequests are every read that memory may answer, a write and the readiness probe.
var outageRequests = []outageRequest{
	{"read", "GET", "/v1/tenants/acme/cards?q=review", ""},
	{"read", "GET", "/v1/tenants/acme/cards?limit=10", ""},
	{"read", "POST", "/v1/tenants/acme/cards/search", `{"q": "pull request"}`},
	{"read", "GET", "/v1/tenants/acme/cards/agt2", ""},
	{"read", "GET", "/a2a/acme/agents", ""},
	{"read", "GET", "/a2a/acme/.well-known/ai-catalog.json", ""},
	{"read", "GET", "/a2a/acme/agt1/.well-known/agent-card.json", ""},
	{"read", "GET", "/v1/tenants/acme/roles", ""},
	{"write", "PATCH", "/v1/tenants/acme/cards/agt3", `{"description": "Reviews."}`},
	{"ready", "GET", "/ready", ""},
}

// outageLoad sends each of outageRequests in a loop of its own, as alice, and records what
// each call met.
type outageLoad struct {
	e        *env
	alice    string
	halt     chan struct{}
	wg       sync.WaitGroup
	haltOnce sync.Once
	mu       sync.Mutex
	calls    []outageCall
}

func startOutageLoad(e *env, alice string) *outageLoad {
	l := &outageLoad{e: e, alice: alice, halt: make(chan struct{})}
	for _, r := range outageRequests {
		l.wg.Go(func() {
			for {
				select {
				case <-l.halt:
					return
				default:
				}
				c := l.call(r)
				l.mu.Lock()
				l.calls = append(l.calls, c)
				l.mu.Unlock()
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
	return l
}

// call sends r once and answers what it met. A page of the public agent list that lost cards
// counts as a failure, status -1.
func (l *outageLoad) call(r outageRequest) outageCall {
	req, err := http.NewRequest(r.method, l.e.srv.URL+r.path, strings.NewReader(r.body))
	if err != nil {
		panic(err)
	}
	req.Header.Set("Authorization", "Bearer "+l.alice)
	if r.body != "" {
		req.Header.Set("Content-Type", "application/json")
		if r.method == "PATCH" {
			req.Header.Set("Content-Type", "application/merge-patch+json")
		}
	}
	c := outageCall{kind: r.kind, what: r.method + " " + r.path, start: time.Now()}
	res, err := l.e.srv.Client().Do(req)
	c.end = time.Now()
	if err == nil {
		var body bytes.Buffer
		_, _ = body.ReadFrom(res.Body)
		_ = res.Body.Close()
		c.status = res.StatusCode
		c.stale = res.Header.Get(web.HeaderStale) != ""
		c.store = res.Header.Get("Cache-Control") == "no-store"
		if c.status == http.StatusOK && r.path == "/a2a/acme/agents" {
			var page struct{ Items []json.RawMessage }
			if json.Unmarshal(body.Bytes(), &page) != nil || len(page.Items) != 3 {
				c.status = -1
			}
		}
	}
	return c
}

// stop ends the load, waits for its calls to end, and answers them all.
func (l *outageLoad) stop() []outageCall {
	l.haltOnce.Do(func() { close(l.halt) })
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls
}

// checkMCPMarksStale checks that the MCP door passes the mark on during an outage: a text
// first, and the note under _meta.
func checkMCPMarksStale(t *testing.T, e *env, alice string) {
	session := mustSession(t, e, alice)
	res, err := session.CallTool(context.Background(), &sdk.CallToolParams{Name: "cards_search", Arguments: map[string]any{"q": "review"}})
	if err != nil || res.IsError || res.Meta[mcp.StaleMeta] == nil || len(res.Content) < 2 {
		t.Errorf("an MCP search during the outage: %v, %+v; want its answer marked", err, res)
	} else if text, ok := res.Content[0].(*sdk.TextContent); !ok || !strings.HasPrefix(text.Text, "Answered from memory") {
		t.Errorf("an MCP search during the outage: its first text is %+v; want the notice", res.Content[0])
	}
}

// checkOutageCalls checks each call of the load against the moments the database was cut and
// found down and back: every read after the cut answered 200, and marked while it was down;
// writes refused while down and served after; no /ready 200 while down; nothing marked after.
func checkOutageCalls(t *testing.T, calls []outageCall, cut, foundDown, foundUp time.Time) {
	var duringReads, duringWrites, afterWrites int
	// A broken server fails most calls: the first few say enough.
	var failed int
	fail := func(format string, args ...any) {
		t.Helper()
		if failed++; failed <= 10 {
			t.Errorf(format, args...)
		}
	}
	for _, c := range calls {
		during := c.start.After(foundDown) && c.end.Before(foundUp)
		after := c.start.After(foundUp)
		switch {
		case c.kind == "read" && c.start.After(cut) && c.end.Before(foundUp) && c.status != http.StatusOK:
			// The read that finds the outage is answered from memory too.
			fail("%s %s after the database went away: %d, want 200 from memory", c.what, c.start.Sub(cut), c.status)
		case during && c.kind == "read":
			duringReads++
			if c.status != http.StatusOK || !c.stale || !c.store {
				fail("%s during the outage: %d, stale %v, no-store %v; want 200 from memory, marked", c.what, c.status, c.stale, c.store)
			}
		case during && c.kind == "write":
			duringWrites++
			if c.status != http.StatusServiceUnavailable {
				fail("%s during the outage: %d, want 503", c.what, c.status)
			}
		case during && c.kind == "ready":
			if c.status == http.StatusOK {
				fail("/ready answered 200 while the gate refused writes (%s after the database was found down)", c.start.Sub(foundDown))
			}
		case after && c.kind == "write":
			afterWrites++
			if c.status != http.StatusOK {
				fail("%s %s after the database was found back: %d", c.what, c.start.Sub(foundUp), c.status)
			}
		case after && c.status == http.StatusOK && c.stale:
			fail("%s %s after the database was found back: marked stale", c.what, c.start.Sub(foundUp))
		}
	}
	if failed > 10 {
		t.Errorf("and %d more", failed-10)
	}
	if duringReads < 20 || duringWrites < 2 || afterWrites < 2 {
		t.Errorf("the load sent %d reads and %d writes during the outage and %d writes after it: too few to tell", duringReads, duringWrites, afterWrites)
	}
}
