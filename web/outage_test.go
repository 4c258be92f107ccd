package web_test

import (
	"context"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentcards/agentcards/migrations"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/web"
	"github.com/agentcards/agentcards/web/webtest"
)

// TestDatabaseOutageIsUnavailable: while the database server cannot be reached, requests that
// need it answer 503 unavailable with Retry-After (not 500 internal, which says the server has a
// bug), reads and writes alike; once it is back, everything answers again without a restart.
func TestDatabaseOutageIsUnavailable(t *testing.T) {
	for _, dialect := range []string{migrations.Postgres, migrations.MySQL} {
		t.Run(dialect, func(t *testing.T) {
			db, outage := storagetest.OpenWithOutage(t, dialect)
			// The tenant row stays remembered through the outage, so every request passes the
			// tenant gate and fails at its own database call: the card read, the search, the
			// writes; the platform admin's list and /ready have no gate.
			var logged webtest.LogBuffer
			e := newEnvWith(t, db, envOptions{tenantCacheTTL: time.Hour, noIndex: true, log: slog.New(slog.NewTextHandler(&logged, nil))})
			e.mkTenant("acme", "alice")
			alice := e.token("alice", "acme", false)
			expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, sampleCard("agt1")), http.StatusCreated)
			expect(t, e.do("GET", "/v1/tenants/acme/cards/agt1", alice, nil), http.StatusOK)

			outage.Down()
			for _, req := range []struct {
				method, path, token string
				body                any
			}{
				{"GET", "/v1/tenants/acme/cards/agt1", alice, nil},
				{"GET", "/v1/tenants/acme/cards?q=review", alice, nil},
				{"POST", "/v1/tenants/acme/cards", alice, sampleCard("agt2")},
				{"PATCH", "/v1/tenants/acme/cards/agt1", alice, map[string]any{"description": "x"}},
				{"GET", "/v1/tenants", e.admin(), nil},
				{"GET", "/ready", "", nil},
			} {
				r := e.do(req.method, req.path, req.token, req.body)
				expect(t, r, http.StatusServiceUnavailable, "unavailable")
				if r.header.Get("Retry-After") == "" {
					t.Errorf("%s %s: 503 without Retry-After", req.method, req.path)
				}
			}

			// The outage is said once, not once per failed request (nor twice per /ready).
			if n := strings.Count(logged.String(), "level=ERROR"); n != 1 || !strings.Contains(logged.String(), "the database does not answer") {
				t.Errorf("%d error lines for one outage:\n%s", n, logged.String())
			}

			outage.Up()
			webtest.Eventually(t, 15*time.Second, "the card served fresh again after the outage", func() bool {
				r := e.do("GET", "/v1/tenants/acme/cards/agt1", alice, nil)
				return r.status == http.StatusOK && r.header.Get(web.HeaderStale) == ""
			})
			expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, sampleCard("agt2")), http.StatusCreated)
			expect(t, e.do("GET", "/ready", "", nil), http.StatusOK)
			if !regexp.MustCompile(`the database answers again.*failedRequests=([6-9]|\d\d)`).MatchString(logged.String()) {
				t.Errorf("the end of the outage is not said with its count:\n%s", logged.String())
			}
		})
	}
}

// TestOutageReadsFromMemory: while the database cannot be reached, a tenant whose index is
// loaded still answers searches, card GETs and A2A cards from memory (the tenant row and policy
// as last read), each marked stale; every write answers 503 with Retry-After; once the database
// is back the answers are fresh again. With the outage copy (the default) memory holds every
// card of the tenant, read before or not; without it, only those that searches and reads
// returned, and a read of another card answers 503 too.
func TestOutageReadsFromMemory(t *testing.T) {
	for _, dialect := range []string{migrations.Postgres, migrations.MySQL} {
		for _, mode := range []string{"copy", "nocopy"} {
			t.Run(dialect+"/"+mode, func(t *testing.T) { testOutageReadsFromMemory(t, dialect, mode == "copy") })
		}
	}
}

func testOutageReadsFromMemory(t *testing.T, dialect string, copied bool) {
	db, outage := storagetest.OpenWithOutage(t, dialect)
	e := newEnvWith(t, db, envOptions{noCopy: !copied})
	alice, fresh := cardsInMemory(t, e, copied)
	if dialect == migrations.Postgres {
		checkSlowDatabaseWaitedFor(t, e, db, alice)
	}

	outage.Down()
	time.Sleep(defaultTenantCacheTTL) // the tenant row read before the outage expires
	checkReadsFromMemory(t, e, alice, fresh)
	fromCopy := checkUnreadDuringOutage(t, e, alice, copied)

	outage.Up()
	webtest.Eventually(t, 15*time.Second, "fresh answers once the database is back", func() bool {
		r := e.do("GET", "/v1/tenants/acme/cards/agt3", alice, nil)
		return r.status == http.StatusOK && r.header.Get(web.HeaderStale) == ""
	})
	if r := e.do("GET", outageSearch, alice, nil); r.status != http.StatusOK || r.header.Get(web.HeaderStale) != "" {
		t.Errorf("a search after the outage: %d, stale %q", r.status, r.header.Get(web.HeaderStale))
	}
	for path, body := range fromCopy {
		r := e.do("GET", path, alice, nil)
		expect(t, r, http.StatusOK)
		webtest.JSONEqual(t, "GET "+path+" from the outage copy", body, r.body)
	}
}

// outageSearch is the search testOutageReadsFromMemory asks before and during the outage; it
// finds agt1 and agt2.
const outageSearch = "/v1/tenants/acme/cards?q=review"

// outageUnread are the reads of agt3, which no search or read returned before the outage:
// alone and in a search.
var outageUnread = []string{"/v1/tenants/acme/cards/agt3", "/v1/tenants/acme/cards?q=translate"}

// cardsInMemory creates tenant acme with the public cards agt1 and agt2 and a translator,
// agt3. outageSearch loads the index and holds the cards it returns; a GET of agt1's A2A card
// holds it. With the outage copy (copied), it waits for the copy to hold all three. It answers
// alice's token and the search's fresh answer.
func cardsInMemory(t *testing.T, e *env, copied bool) (string, response) {
	e.mkTenant("acme", "alice")
	alice := e.token("alice", "acme", false)
	for _, id := range []string{"agt1", "agt2"} {
		card := sampleCard(id)
		card["visibility"] = "public"
		expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, card), http.StatusCreated)
	}
	other := sampleCard("agt3")
	other["name"], other["description"], other["tags"] = "Translator", "Translates documents.", []string{"language"}
	other["capabilities"] = []any{map[string]any{"name": "translate", "description": "Translate a text", "inputSchema": map[string]any{"type": "object"}}}
	expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, other), http.StatusCreated)
	fresh := e.do("GET", outageSearch, alice, nil)
	expect(t, fresh, http.StatusOK)
	expect(t, e.do("GET", "/a2a/acme/agt1/.well-known/agent-card.json", "", nil), http.StatusOK)
	if fresh.header.Get(web.HeaderStale) != "" {
		t.Fatalf("a fresh answer is marked stale")
	}
	if copied {
		webtest.Eventually(t, 10*time.Second, "the outage copy filled", func() bool {
			sizes := e.index.Sizes()
			return len(sizes) == 1 && sizes[0].CopyCards == 3
		})
	}
	return alice, fresh
}

// checkSlowDatabaseWaitedFor: a database that is slow, not down (the tenants table locked for
// 3 s, longer than the gate waits before it pings), is waited for: nothing is answered from
// memory, even with every connection of the pool waiting on the lock (the ping has its own).
// Postgres only.
func checkSlowDatabaseWaitedFor(t *testing.T, e *env, db *storage.DB, alice string) {
	ctx := context.Background()
	conn, err := db.SQL().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("LOCK TABLE tenants IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(3*time.Second, func() { _ = tx.Rollback(); _ = conn.Close() })
	time.Sleep(defaultTenantCacheTTL)
	var wg sync.WaitGroup
	for range 12 {
		wg.Go(func() {
			r := e.do("GET", "/v1/tenants/acme/cards/agt1", alice, nil)
			if r.status != http.StatusOK || r.header.Get(web.HeaderStale) != "" {
				t.Errorf("a read that waited for a slow database: %d %s, stale %q; want 200, fresh", r.status, r.body, r.header.Get(web.HeaderStale))
			}
		})
	}
	wg.Wait()
}

// checkReadsFromMemory checks, with the database down, what memory holds whether or not there
// is an outage copy: the search (as answered fresh), the cards it returned, agt1's A2A card and
// the tenant's AI Catalog (signed, kept by no cache), each marked stale.
func checkReadsFromMemory(t *testing.T, e *env, alice string, fresh response) {
	for _, path := range []string{outageSearch, "/v1/tenants/acme/cards/agt1", "/v1/tenants/acme/cards/agt2"} {
		r := e.do("GET", path, alice, nil)
		expect(t, r, http.StatusOK)
		if r.header.Get(web.HeaderStale) == "" {
			t.Errorf("GET %s from memory is not marked stale", path)
		}
	}
	webtest.JSONEqual(t, "the search from memory", e.do("GET", outageSearch, alice, nil).body, fresh.body)
	a2aCard := e.do("GET", "/a2a/acme/agt1/.well-known/agent-card.json", "", nil)
	expect(t, a2aCard, http.StatusOK)
	if a2aCard.header.Get(web.HeaderStale) == "" || a2aCard.header.Get("Cache-Control") != "no-store" {
		t.Errorf("the A2A card from memory: stale %q, Cache-Control %q; want it marked, and kept by no cache",
			a2aCard.header.Get(web.HeaderStale), a2aCard.header.Get("Cache-Control"))
	}
	if err := webtest.VerifyCard(e.jwks(), a2aCard.body); err != nil {
		t.Errorf("the A2A card from memory: %v", err)
	}
	catalog := e.do("GET", "/a2a/acme/.well-known/ai-catalog.json", "", nil)
	expect(t, catalog, http.StatusOK)
	var doc struct{ Entries []struct{ Identifier string } }
	catalog.json(t, &doc)
	if catalog.header.Get(web.HeaderStale) == "" || catalog.header.Get("Cache-Control") != "no-store" || len(doc.Entries) != 2 {
		t.Errorf("the AI Catalog from memory: stale %q, Cache-Control %q, %d entries; want it marked, kept by no cache, with agt1 and agt2",
			catalog.header.Get(web.HeaderStale), catalog.header.Get("Cache-Control"), len(doc.Entries))
	}
	if err := webtest.VerifyAICatalog(e.jwks(), catalog.body); err != nil {
		t.Errorf("the AI Catalog from memory: %v", err)
	}
}

// checkUnreadDuringOutage checks, with the database down, the reads of outageUnread: from the
// copy (copied), marked stale, or 503 without it; and every write, 503 with Retry-After. It
// answers the bodies read from the copy by path, to check against the database's answers once
// it is back.
func checkUnreadDuringOutage(t *testing.T, e *env, alice string, copied bool) map[string][]byte {
	fromCopy := map[string][]byte{}
	if copied {
		for _, path := range outageUnread {
			r := e.do("GET", path, alice, nil)
			expect(t, r, http.StatusOK)
			if r.header.Get(web.HeaderStale) == "" {
				t.Errorf("GET %s from the outage copy is not marked stale", path)
			}
			fromCopy[path] = r.body
		}
	}
	// What memory does not hold, and every write: 503 with Retry-After.
	refused := []struct {
		method, path string
		body         any
	}{
		{"POST", "/v1/tenants/acme/cards", sampleCard("agt4")},
		{"PATCH", "/v1/tenants/acme/cards/agt1", map[string]any{"description": "x"}},
	}
	if !copied {
		for _, path := range outageUnread {
			refused = append(refused, struct {
				method, path string
				body         any
			}{"GET", path, nil})
		}
	}
	for _, req := range refused {
		r := e.do(req.method, req.path, alice, req.body)
		expect(t, r, http.StatusServiceUnavailable, "unavailable")
		if r.header.Get("Retry-After") == "" || r.header.Get(web.HeaderStale) != "" {
			t.Errorf("%s %s: 503 with Retry-After %q and stale %q; want Retry-After only", req.method, req.path,
				r.header.Get("Retry-After"), r.header.Get(web.HeaderStale))
		}
	}
	return fromCopy
}

// TestPrivatePostgresStopped: the same with the database server itself stopped (a cluster the
// test started itself, never the shared one), and started again.
func TestPrivatePostgresStopped(t *testing.T) {
	pg := storagetest.StartPrivatePostgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, err := storage.Open(ctx, migrations.Postgres, pg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, db, 1<<20)
	e.mkTenant("acme", "alice")
	alice := e.token("alice", "acme", false)
	expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, sampleCard("agt1")), http.StatusCreated)
	expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, sampleCard("agt2")), http.StatusCreated)
	expect(t, e.do("GET", "/v1/tenants/acme/cards?q=nothing", alice, nil), http.StatusOK) // loads the index
	expect(t, e.do("GET", "/v1/tenants/acme/cards/agt2", alice, nil), http.StatusOK)      // holds agt2
	webtest.Eventually(t, 10*time.Second, "the outage copy filled", func() bool {
		sizes := e.index.Sizes()
		return len(sizes) == 1 && sizes[0].CopyCards == 2
	})

	pg.Stop()
	time.Sleep(defaultTenantCacheTTL) // the tenant row remembered before the outage expires
	// The cards memory holds are answered from it, marked stale: the one read (the render
	// cache) and the one not (the outage copy); what needs the database cannot be.
	for _, id := range []string{"agt1", "agt2"} {
		if r := e.do("GET", "/v1/tenants/acme/cards/"+id, alice, nil); r.status != http.StatusOK || r.header.Get(web.HeaderStale) == "" {
			t.Errorf("card %s, held in memory, with the server stopped: %d, stale %q", id, r.status, r.header.Get(web.HeaderStale))
		}
	}
	for _, path := range []string{"/v1/tenants/acme/audit", "/ready"} {
		r := e.do("GET", path, alice, nil)
		expect(t, r, http.StatusServiceUnavailable, "unavailable")
		if r.header.Get("Retry-After") == "" {
			t.Errorf("GET %s: 503 without Retry-After", path)
		}
	}
	expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, sampleCard("agt3")), http.StatusServiceUnavailable, "unavailable")

	pg.Start()
	webtest.Eventually(t, 15*time.Second, "the card served fresh again once the server is back", func() bool {
		r := e.do("GET", "/v1/tenants/acme/cards/agt1", alice, nil)
		return r.status == http.StatusOK && r.header.Get(web.HeaderStale) == ""
	})
	expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, sampleCard("agt3")), http.StatusCreated)
}

// TestOutageSaidOnceInTheBackground: the loops that follow other replicas' writes (the index's
// feed, the liveness records, polled every 500 ms) say an outage once, not at every round.
func TestOutageSaidOnceInTheBackground(t *testing.T) {
	db, outage := storagetest.OpenWithOutage(t, migrations.Postgres)
	var logged webtest.LogBuffer
	e := newEnvWith(t, db, envOptions{follow: true, log: slog.New(slog.NewTextHandler(&logged, nil))})
	e.mkTenant("acme", "alice")
	alice := e.token("alice", "acme", false)
	expect(t, e.do("GET", "/v1/tenants/acme/cards?q=review", alice, nil), http.StatusOK) // loads the index
	outage.Down()
	webtest.Eventually(t, 15*time.Second, "both loops fail", func() bool {
		return strings.Contains(logged.String(), "index sync failed") && strings.Contains(logged.String(), "liveness failed")
	})
	time.Sleep(2 * time.Second) // four more rounds of each
	for _, msg := range []string{"index sync failed", "reading other replicas' liveness failed"} {
		if n := strings.Count(logged.String(), msg); n != 1 {
			t.Errorf("%q said %d times in an outage of a few seconds, want once", msg, n)
		}
	}
	outage.Up()
}

// TestOutageHungDatabase: a database that hangs (connections open, nothing answered, as behind
// an unplugged network) holds requests a few seconds, not the request timeout: the first request
// (here a write) whose tenant row the gate waits for finds it down, then reads memory holds are answered from it (marked
// stale) without asking the database, and the other requests are refused at once with 503 and
// Retry-After. The log says the outage once, with the reads answered from memory, and its end.
func TestOutageHungDatabase(t *testing.T) {
	for _, dialect := range []string{migrations.Postgres, migrations.MySQL} {
		t.Run(dialect, func(t *testing.T) {
			db, outage := storagetest.OpenWithOutage(t, dialect)
			var logged webtest.LogBuffer
			e := newEnvWith(t, db, envOptions{requestTimeout: time.Minute, log: slog.New(slog.NewTextHandler(&logged, nil))})
			e.mkTenant("acme", "alice")
			alice := e.token("alice", "acme", false)
			for _, id := range []string{"agt1", "agt2"} {
				expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, sampleCard(id)), http.StatusCreated)
			}
			// agt3 is no answer of the search: only the outage copy holds it.
			other := sampleCard("agt3")
			other["name"], other["description"], other["tags"] = "Translator", "Translates documents.", []string{"language"}
			other["capabilities"] = []any{map[string]any{"name": "translate", "description": "Translate a text"}}
			expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, other), http.StatusCreated)
			search := "/v1/tenants/acme/cards?q=review"
			expect(t, e.do("GET", search, alice, nil), http.StatusOK) // loads the index, holds agt1 and agt2
			webtest.Eventually(t, 10*time.Second, "the outage copy filled", func() bool {
				sizes := e.index.Sizes()
				return len(sizes) == 1 && sizes[0].CopyCards == 3
			})

			outage.Hang()
			defer outage.Up()
			time.Sleep(defaultTenantCacheTTL) // the tenant row read before the outage expires
			start := time.Now()
			// A write comes first: its tenant row does not answer, a ping does not either, and it
			// is refused (where it would wait for the request timeout, a minute).
			r := e.do("POST", "/v1/tenants/acme/cards", alice, sampleCard("agt5"))
			expect(t, r, http.StatusServiceUnavailable, "unavailable")
			if d := time.Since(start); d > 15*time.Second || r.header.Get("Retry-After") == "" {
				t.Errorf("the first write while the database hangs: answered after %v, Retry-After %q", d, r.header.Get("Retry-After"))
			}
			for range 3 {
				for _, path := range []string{search, "/v1/tenants/acme/cards/agt1", "/v1/tenants/acme/cards/agt3"} {
					r := e.do("GET", path, alice, nil)
					if r.status != http.StatusOK || r.header.Get(web.HeaderStale) == "" {
						t.Errorf("GET %s while the database hangs: %d, stale %q; want 200 from memory", path, r.status, r.header.Get(web.HeaderStale))
					}
				}
			}
			// What memory does not hold, and writes: refused, not held for the request timeout.
			for _, req := range []struct {
				method, path string
				body         any
			}{
				{"GET", "/v1/tenants/acme/audit", nil},
				{"POST", "/v1/tenants/acme/cards", sampleCard("agt4")},
				{"PATCH", "/v1/tenants/acme/cards/agt1", map[string]any{"description": "x"}},
			} {
				r := e.do(req.method, req.path, alice, req.body)
				expect(t, r, http.StatusServiceUnavailable, "unavailable")
				if r.header.Get("Retry-After") == "" {
					t.Errorf("%s %s: 503 without Retry-After", req.method, req.path)
				}
			}
			// A minute's request timeout would be seen here; the gate's waits are seconds.
			if d := time.Since(start); d > 30*time.Second {
				t.Errorf("13 requests while the database hangs took %v", d)
			}
			if n := strings.Count(logged.String(), "level=ERROR"); n != 1 || !strings.Contains(logged.String(), "answered from it (marked stale)") {
				t.Errorf("%d error lines for one outage:\n%s", n, logged.String())
			}

			outage.Up()
			webtest.Eventually(t, 15*time.Second, "fresh answers once the database answers", func() bool {
				r := e.do("GET", "/v1/tenants/acme/audit", alice, nil)
				return r.status == http.StatusOK && r.header.Get(web.HeaderStale) == ""
			})
			expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, sampleCard("agt4")), http.StatusCreated)
			if !regexp.MustCompile(`the database answers again.*failedRequests=([3-9]|\d\d).*staleAnswers=(9|\d\d)`).MatchString(logged.String()) {
				t.Errorf("the end of the outage is not said with its counts:\n%s", logged.String())
			}
		})
	}
}
