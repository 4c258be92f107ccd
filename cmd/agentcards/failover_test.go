package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentcards/agentcards/migrations"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/storage/storagetest/privatepg"
	"github.com/agentcards/agentcards/web/webtest"
)

// failoverWorkers is how many clients write cards at once during a failover test, half of them
// to each replica.
const failoverWorkers = 4

// TestServeCarriesOnAfterFailover runs two replicas over a Postgres primary and its streaming
// standby, both hosts in the DSN with target_session_attrs=read-write, while clients register
// cards on both. It stops the primary at once (immediate: no checkpoint, connections cut) and
// promotes the standby. The replicas serve writes again without a restart; each one's search
// index then finds exactly the cards of the database, and the change feed followed from a
// cursor taken before the stop gives every one of them. With synchronous replication no card
// answered 201 before the stop is lost; with asynchronous replication the lost ones are counted
// and logged, as the window the documentation gives (docs/scaling.md, "Postgres with a standby: failover").
func TestServeCarriesOnAfterFailover(t *testing.T) {
	for _, c := range []struct {
		name string
		o    privatepg.PairOptions
		// cut stops the standby's streaming after the first writes: those after it are lost.
		cut bool
	}{
		{"sync", privatepg.PairOptions{Sync: true, Slot: true, Settings: []string{"fsync=off"}}, false},
		{"async", privatepg.PairOptions{Sync: false, Slot: false, Settings: []string{"fsync=off"}}, false},
		{"async-behind", privatepg.PairOptions{Sync: false, Slot: false, Settings: []string{"fsync=off"}}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			pair := storagetest.StartPrivatePair(t, c.o)
			replicas := []served{
				startServe(t, serveConfig(t, migrations.Postgres, pair.DSN, "index: memory", "listen: true")),
				startServe(t, serveConfig(t, migrations.Postgres, pair.DSN, "index: memory", "listen: true")),
			}
			root := webtest.Mint(t, webtest.Tokens(t), "root", "", true)
			replicas[0].api.CreateTenant(t, root, "acme", "alice")
			for _, r := range replicas { // loads each replica's index of acme
				if got, _ := searchAll(t, r, root); len(got) != 0 {
					t.Fatalf("cards before any write: %q", got)
				}
			}
			cursor := feedCursor(t, replicas[0], root)

			load := startWriters(replicas, root)
			load.await(t, 100, 30*time.Second) // acknowledged before the stop
			if c.cut {
				if err := pair.Cut(); err != nil {
					t.Fatal(err)
				}
				load.await(t, 300, 30*time.Second)
			}
			lag, err := pair.Primary.Query("SELECT concat_ws(' ', coalesce(write_lag, '0'), coalesce(flush_lag, '0'), coalesce(replay_lag, '0')) FROM pg_stat_replication")
			if err != nil {
				t.Fatal(err)
			}
			stopping := time.Now()
			if err := pair.Primary.Stop(); err != nil {
				t.Fatal(err)
			}
			killed := time.Now() // the primary's processes are gone
			if err := pair.Standby.Promote(); err != nil {
				t.Fatal(err)
			}
			promoted := time.Since(killed)
			back := load.writingAgain(t, killed, 30*time.Second)
			time.Sleep(500 * time.Millisecond) // writes on the new primary, from both replicas
			load.stop()

			stored := storedCards(t, pair.Standby.DSN)
			acked := load.acked()
			var lost []string
			var firstLost time.Time
			for id, at := range acked {
				if _, ok := stored[id]; !ok && at.Before(killed) {
					lost = append(lost, id)
					if firstLost.IsZero() || at.Before(firstLost) {
						firstLost = at
					}
				}
			}
			for id, at := range acked {
				if _, ok := stored[id]; !ok && !at.Before(killed) {
					t.Errorf("card %s answered 201 after the stop (%s) is not in the database", id, at.Sub(killed))
				}
			}
			slices.Sort(lost)
			t.Logf("%s: standby's lag before the stop (write, flush, replay) %q; stop took %s, then promoted in %s; first write served again after the stop: replica 0 %s, replica 1 %s",
				c.name, lag, killed.Sub(stopping).Round(time.Millisecond), promoted.Round(time.Millisecond),
				back[0].Round(time.Millisecond), back[1].Round(time.Millisecond))
			t.Logf("%s: %d cards answered 201 before the stop, %d lost; %d stored; answers during the switch: %s",
				c.name, load.ackedBefore(killed), len(lost), len(stored), load.failures())
			if len(lost) > 0 {
				t.Logf("%s: lost %s, the first answered %s before pg_ctl stop began, %s before it returned", c.name, abbreviate(lost),
					stopping.Sub(firstLost).Round(time.Microsecond), killed.Sub(firstLost).Round(time.Microsecond))
			}
			if c.o.Sync && len(lost) > 0 {
				t.Errorf("synchronous replication lost %d cards answered 201: %q", len(lost), lost)
			}

			// Each index must come to hold exactly the database's cards, also after writes were
			// lost: an index that held lost cards, or skipped entries whose change-feed numbers the
			// new primary gave out again, no longer agrees with the database when the replica's
			// LISTEN is back, and loads again (Index.Verify).
			want := slices.Sorted(maps.Keys(stored))
			wait := 15 * time.Second
			deadline := time.Now().Add(wait)
			for i, r := range replicas {
				got, total := searchAll(t, r, root)
				for !(slices.Equal(got, want) && total == len(want)) && time.Now().Before(deadline) {
					time.Sleep(100 * time.Millisecond)
					got, total = searchAll(t, r, root)
				}
				if !(slices.Equal(got, want) && total == len(want)) {
					t.Errorf("replica %d's index after %d lost writes: %d cards of %d stored (search total %d), missing %d: %s, extra %q",
						i, len(lost), len(got), len(want), total, len(minus(want, got)), abbreviate(minus(want, got)), minus(got, want))
				}
				followed := followFeed(t, r, root, cursor)
				if missing := minus(want, followed); len(missing) > 0 {
					t.Errorf("replica %d: the change feed from before the stop misses %d stored cards: %q", i, len(missing), missing)
				}
				var failed []string
				for _, line := range strings.Split(r.log.String(), "\n") {
					if strings.Contains(line, "request failed") {
						failed = append(failed, line)
					}
				}
				if len(failed) > 0 {
					t.Logf("replica %d logged %d failed requests, the first: %s", i, len(failed), failed[0])
				}
				if !strings.Contains(r.log.String(), "the database answers again") {
					t.Logf("replica %d did not log the end of an outage:\n%s", i, r.log)
				}
			}
		})
	}
}

// writers register cards on the replicas until stopped, and record the answers.
type writers struct {
	halt chan struct{}
	wg   sync.WaitGroup

	mu sync.Mutex
	// ok is when each card answered 201 was answered; served is, by replica, the times requests
	// sent then were answered 201; failed counts the other answers by status and code.
	ok     map[string]time.Time
	served [2][]time.Time
	failed map[string]int
}

// startWriters starts failoverWorkers clients, each writing to one replica, cards that the
// search "pull requests" finds.
func startWriters(replicas []served, token string) *writers {
	w := &writers{halt: make(chan struct{}), ok: map[string]time.Time{}, failed: map[string]int{}}
	hc := &http.Client{Timeout: 10 * time.Second}
	for n := range failoverWorkers {
		replica := n % 2
		base := replicas[replica].api.BaseURL + "/v1/tenants/acme/cards"
		w.wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-w.halt:
					return
				default:
				}
				id := fmt.Sprintf("w%d-%d", n, i)
				body, _ := json.Marshal(map[string]any{"agentId": id, "name": "Agent " + id, "description": "Reviews pull requests",
					"protocols": []string{"http"}, "endpoint": "https://agents.example.com/" + id,
					"capabilities": []any{map[string]any{"name": "review_pr"}}})
				req, _ := http.NewRequest(http.MethodPost, base, bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+token)
				sent := time.Now()
				status, code := post(hc, req)
				w.record(replica, id, sent, status, code)
				if status != http.StatusCreated {
					time.Sleep(20 * time.Millisecond) // as a client backs off, briefly
				}
			}
		})
	}
	return w
}

// post sends req and returns the answer's status and error code (status 0: no answer).
func post(hc *http.Client, req *http.Request) (int, string) {
	res, err := hc.Do(req)
	if err != nil {
		return 0, "no answer"
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(b, &e)
	return res.StatusCode, e.Error.Code
}

func (w *writers) record(replica int, id string, sent time.Time, status int, code string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if status == http.StatusCreated {
		w.ok[id] = time.Now()
		w.served[replica] = append(w.served[replica], sent)
		return
	}
	w.failed[fmt.Sprintf("%d %s", status, code)]++
}

// await waits until n cards were answered 201.
func (w *writers) await(t *testing.T, n int, timeout time.Duration) {
	t.Helper()
	webtest.Eventually(t, timeout, fmt.Sprintf("%d cards written", n), func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return len(w.ok) >= n
	})
}

// writingAgain waits until each replica has answered 201 to a request sent after since, and
// returns how long after since each was sent.
func (w *writers) writingAgain(t *testing.T, since time.Time, timeout time.Duration) [2]time.Duration {
	t.Helper()
	var back [2]time.Duration
	webtest.Eventually(t, timeout, "both replicas write again", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		done := true
		for r := range back {
			back[r] = 0
			for _, sent := range w.served[r] {
				if sent.After(since) {
					back[r] = sent.Sub(since)
					break
				}
			}
			done = done && back[r] > 0
		}
		return done
	})
	return back
}

func (w *writers) stop() {
	close(w.halt)
	w.wg.Wait()
}

func (w *writers) acked() map[string]time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.ok)
}

func (w *writers) ackedBefore(t time.Time) int {
	n := 0
	for _, at := range w.acked() {
		if at.Before(t) {
			n++
		}
	}
	return n
}

// failures lists the answers other than 201, with their counts.
func (w *writers) failures() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for k, n := range w.failed {
		out = append(out, fmt.Sprintf("%s ×%d", k, n))
	}
	slices.Sort(out)
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// abbreviate shows the first few of ids and how many there are.
func abbreviate(ids []string) string {
	if len(ids) <= 5 {
		return fmt.Sprintf("%q", ids)
	}
	return fmt.Sprintf("%q and %d more", ids[:5], len(ids)-5)
}

// minus returns the items of a not in b, both sorted.
func minus(a, b []string) []string {
	var out []string
	for _, s := range a {
		if _, ok := slices.BinarySearch(b, s); !ok {
			out = append(out, s)
		}
	}
	return out
}

// storedCards returns acme's cards in the database at dsn, by agent id.
func storedCards(t *testing.T, dsn string) map[string]bool {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rows, err := db.QueryContext(ctx, "SELECT agent_id FROM cards WHERE tenant_id = 'acme'")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		out[id] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// searchAll returns the agents the replica's search for "pull requests" finds in acme, every
// page, sorted, and the total the search counts.
func searchAll(t *testing.T, s served, token string) ([]string, int) {
	t.Helper()
	ids := []string{}
	path := "/v1/tenants/acme/cards?q=pull+requests&limit=100"
	for {
		r := s.api.Do(t, http.MethodGet, path, token, nil)
		webtest.Expect(t, r, http.StatusOK)
		var page struct {
			Items []struct {
				Card struct {
					AgentID string `json:"agentId"`
				} `json:"card"`
			} `json:"items"`
			NextCursor string `json:"nextCursor"`
			Total      int    `json:"total"`
		}
		r.JSON(t, &page)
		for _, it := range page.Items {
			ids = append(ids, it.Card.AgentID)
		}
		if page.NextCursor == "" {
			slices.Sort(ids)
			return ids, page.Total
		}
		path = "/v1/tenants/acme/cards?q=pull+requests&limit=100&cursor=" + url.QueryEscape(page.NextCursor)
	}
}

// feedCursor returns the present cursor of acme's change feed.
func feedCursor(t *testing.T, s served, token string) string {
	t.Helper()
	r := s.api.Do(t, http.MethodGet, "/v1/tenants/acme/cards:changes", token, nil)
	webtest.Expect(t, r, http.StatusOK)
	var page struct {
		NextCursor string `json:"nextCursor"`
	}
	r.JSON(t, &page)
	return page.NextCursor
}

// followFeed follows acme's change feed from cursor until it has caught up, and returns the
// agents of the cards it upserted and did not remove since, sorted.
func followFeed(t *testing.T, s served, token, cursor string) []string {
	t.Helper()
	live := map[string]bool{}
	for {
		r := s.api.Do(t, http.MethodGet, "/v1/tenants/acme/cards:changes?limit=1000&since="+url.QueryEscape(cursor), token, nil)
		webtest.Expect(t, r, http.StatusOK)
		var page struct {
			Changes []struct {
				Op      string `json:"op"`
				AgentID string `json:"agentId"`
			} `json:"changes"`
			NextCursor string `json:"nextCursor"`
			More       bool   `json:"more"`
		}
		r.JSON(t, &page)
		for _, c := range page.Changes {
			live[c.AgentID] = c.Op == "upsert"
		}
		cursor = page.NextCursor
		if !page.More {
			break
		}
	}
	var out []string
	for id, ok := range live {
		if ok {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}
