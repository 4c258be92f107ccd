package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentcards/agentcards/migrations"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/web/api"
	"github.com/agentcards/agentcards/web/client"
	"github.com/agentcards/agentcards/web/webtest"
)

// TestServeBehindPgBouncer: two servers reach Postgres through PgBouncer in transaction pooling
// mode, configured as docs/scaling.md says: database.dsn through the pooler with
// default_query_exec_mode=exec, database.directDsn straight to Postgres. The pooler has two
// server connections for the twenty the servers may open, so a client's transactions keep
// landing on server connections that other clients used last. Cards written on either server
// are read and searched on both; the first, polling only hourly, finds the second's card through
// its LISTEN on the direct connection, and its live stream of the change feed hears it too; a
// webhook subscribed on the second is delivered (its lease is a row in the database).
func TestServeBehindPgBouncer(t *testing.T) {
	_, direct := storagetest.EmptyDatabase(t, migrations.Postgres)
	pgb := storagetest.StartPgBouncer(t, direct, 2)
	pooled := pgb.DSN + "&default_query_exec_mode=exec"
	hook := &subjects{}
	receiver := httptest.NewServer(hook)
	defer receiver.Close()
	config := func() string {
		c := serveConfig(t, migrations.Postgres, pooled, "index: memory", "pollInterval: 1h", "listen: true")
		c = strings.Replace(c, "database:\n", fmt.Sprintf("database:\n  directDsn: %q\n", direct), 1)
		return c + "outbound:\n  allow: [127.0.0.1/32]\nwebhooks:\n  pollInterval: 100ms\n"
	}
	first, second := startServe(t, config()), startServe(t, config())
	for i, s := range []served{first, second} {
		if log := s.log.String(); !strings.Contains(log, followLine) {
			t.Fatalf("server %d does not follow with LISTEN:\n%s", i, log)
		}
	}

	root := webtest.Mint(t, webtest.Tokens(t), "root", "", true)
	first.api.CreateTenant(t, root, "acme", "alice")
	webtest.Expect(t, second.api.Do(t, http.MethodPost, "/v1/tenants/acme/webhooks", root, map[string]any{"url": receiver.URL}),
		http.StatusCreated)
	// The first server's live stream, from the feed's present.
	var present api.ChangePage
	r := first.api.Do(t, http.MethodGet, "/v1/tenants/acme/cards:changes", root, nil)
	webtest.Expect(t, r, http.StatusOK)
	r.JSON(t, &present)
	streamed := &subjects{}
	ctx, cancel := context.WithCancel(context.Background())
	watching := make(chan struct{})
	defer func() { cancel(); <-watching }()
	cl, err := client.New(first.api.BaseURL, client.WithToken(root), client.WithTenant("acme"))
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(watching)
		for ch, err := range cl.Cards.Watch(ctx, api.CardsChanges{Since: present.NextCursor}) {
			if err != nil {
				if ctx.Err() == nil {
					t.Errorf("watch: %v", err)
				}
				return
			}
			streamed.add(ch.AgentID)
		}
	}()

	createCard(t, first, root, "acme", "reviewer-a", "Reviews pull requests")
	if got := searchReviewers(t, first, root, "acme"); got != "reviewer-a" { // loads the index
		t.Fatalf("search on the writing server: %q", got)
	}
	createCard(t, second, root, "acme", "reviewer-b", "Reviews pull requests")
	webtest.Expect(t, second.api.Do(t, http.MethodGet, "/v1/tenants/acme/cards/reviewer-a", root, nil), http.StatusOK)
	webtest.Eventually(t, 10*time.Second, "the first server finds the second's card", func() bool {
		return searchReviewers(t, first, root, "acme") == "reviewer-a reviewer-b"
	})
	webtest.Eventually(t, 10*time.Second, "the first server's stream carries both cards", func() bool {
		return streamed.has("reviewer-a", "reviewer-b")
	})
	webtest.Eventually(t, 10*time.Second, "the webhook receives both cards", func() bool {
		return hook.has("reviewer-a", "reviewer-b")
	})

	// Each server's LISTEN connection is a session on Postgres itself, not one of the pooler's.
	admin, err := sql.Open("pgx", direct)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	u, err := url.Parse(direct)
	if err != nil {
		t.Fatal(err)
	}
	var listeners int
	err = admin.QueryRow("SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
		storage.ListenApplication(u.Query().Get("search_path"))).Scan(&listeners)
	if err != nil || listeners != 2 {
		t.Errorf("%d LISTEN connections on Postgres, want one per server: %v", listeners, err)
	}
	if !strings.Contains(pgb.Log(), "login attempt: db=agentcards") {
		t.Errorf("no connection went through PgBouncer:\n%s", pgb.Log())
	}
	for i, s := range []served{first, second} {
		if log := s.log.String(); strings.Contains(log, "level=ERROR") || strings.Contains(log, "level=WARN") {
			t.Errorf("server %d:\n%s", i, log)
		}
	}
}

// subjects records the agent ids it is told of: a webhook receiver (the events' subjects), or a
// stream's reader.
type subjects struct {
	mu  sync.Mutex
	ids []string
}

func (s *subjects) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var ev struct{ Subject string }
	body, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(body, &ev)
	s.add(ev.Subject)
	w.WriteHeader(http.StatusNoContent)
}

func (s *subjects) add(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ids = append(s.ids, id)
}

// has reports whether every one of ids was recorded.
func (s *subjects) has(ids ...string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		if !slices.Contains(s.ids, id) {
			return false
		}
	}
	return true
}
