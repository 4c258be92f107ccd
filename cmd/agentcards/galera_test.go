package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/agentcards/agentcards/migrations"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/storage/storagetest/galera"
	"github.com/agentcards/agentcards/web/webtest"
)

// TestServeOnGalera: a MariaDB Galera cluster of three nodes, one server on each, configured as
// docs/scaling.md says. A mixed load of card writes goes to every server, some to the same cards
// from different nodes, which Galera's certification makes conflict (deadlock errors, run again
// as deadlocks are). Every acknowledged write is then in the database, on every node, none lost
// to a conflict, and every server's search agrees with the database. Then one node is killed
// under load: its server answers 503 (and /ready 503) while the others go on, the node rejoins,
// and again no acknowledged write is missing and all three servers agree. A write that loses to
// other nodes' writes four times in a row would answer 409; none answers 500.
func TestServeOnGalera(t *testing.T) {
	began := time.Now()
	cluster := storagetest.StartGalera(t, 3)
	t.Logf("cluster of 3 synced in %s", time.Since(began).Round(time.Millisecond))
	dsns := make([]string, len(cluster.Nodes))
	for i, nd := range cluster.Nodes {
		cfg, err := gomysql.ParseDSN(nd.DSN)
		if err != nil {
			t.Fatal(err)
		}
		cfg.DBName = "agentcards"
		dsns[i] = cfg.FormatDSN()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cluster.Exec(ctx, "CREATE DATABASE agentcards CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
		t.Fatal(err)
	}

	// Each node hands out its own auto-increment numbers (wsrep_auto_increment_control): the
	// change feed's sequence numbers of the nodes interleave.
	t.Logf("auto_increment_increment/offset: %s", autoIncrement(t, dsns))

	// The first server migrates; the others start once it has. (Replicas that migrate together
	// on several nodes wait for each other's migration lease: TestGalera in storage.)
	config := func(i int) string {
		return serveConfig(t, migrations.MySQL, dsns[i], "index: memory", "pollInterval: 200ms")
	}
	servers := []served{startServe(t, config(0))}
	servers = append(servers, startServe(t, config(1)), startServe(t, config(2)))
	t.Logf("servers started at %s", time.Since(began).Round(time.Millisecond))
	t.Cleanup(func() { // before the cluster stops
		if t.Failed() {
			for i, s := range servers {
				t.Logf("server %d:\n%s", i, problems(s.log.String(), 30))
			}
			t.Log(cluster.Logs(6000))
		}
	})

	root := webtest.Mint(t, webtest.Tokens(t), "root", "", true)
	servers[0].api.CreateTenant(t, root, "acme", "alice")
	l := &galeraLoad{servers: servers, token: root, acked: map[string][]int64{}, last: map[string]ackedWrite{},
		statuses: make([]map[int]int, len(servers))}
	for i := range l.statuses {
		l.statuses[i] = map[int]int{}
	}
	for i := range hotCards {
		if s, _, err := l.write(0, http.MethodPost, "/cards", galeraCard(hotCard(i), 0)); s != http.StatusCreated {
			t.Fatalf("register %s: %d %v", hotCard(i), s, err)
		}
	}
	for _, s := range servers { // every index loaded before the load, so that followers follow
		webtest.Expect(t, s.api.Do(t, http.MethodGet, "/v1/tenants/acme/cards?limit=1", root, nil), http.StatusOK)
	}

	// A mixed load on every server.
	stop := l.start(3)
	time.Sleep(4 * time.Second)
	stop()
	t.Logf("mixed load: %s", l.summary())
	// A write that loses to other nodes' writes four times in a row answers 409; none fails.
	if n := l.count(http.StatusInternalServerError); n > 0 {
		t.Errorf("%d writes answered 500", n)
	}
	conflicts := certFailures(t, dsns)
	t.Logf("certification failures and brute-force aborts (all nodes): %d", conflicts)
	l.check(t, dsns, "after the mixed load")
	t.Logf("checked at %s", time.Since(began).Round(time.Millisecond))

	// The third node killed under load, and started again.
	l.reset()
	stop = l.start(3)
	time.Sleep(time.Second)
	if err := cluster.Nodes[2].Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	webtest.Eventually(t, 20*time.Second, "the server of the killed node answers 503", func() bool {
		return l.count503(2) > 0
	})
	webtest.Expect(t, servers[2].api.Do(t, http.MethodGet, "/ready", "", nil), http.StatusServiceUnavailable)
	// The survivors stall until the group declares the node gone (evs.suspect_timeout), then go on.
	webtest.Eventually(t, 30*time.Second, "the servers of the other nodes acknowledge writes again", func() bool {
		return l.ackedSince(killed.Add(500*time.Millisecond)) > 0
	})
	t.Logf("the other nodes acknowledged writes again %s after the kill; auto_increment_increment/offset: %s",
		time.Since(killed).Round(time.Millisecond), autoIncrement(t, dsns[:2]))
	time.Sleep(time.Second)
	restart, cancelRestart := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancelRestart()
	if err := cluster.Nodes[2].Restart(restart); err != nil {
		t.Fatal(err)
	}
	transfer := "SST"
	if log, err := os.ReadFile(cluster.Nodes[2].Log()); err == nil && bytes.Contains(log, []byte("IST received")) {
		transfer = "IST"
	}
	t.Logf("the node rejoined (by %s) %s after its kill", transfer, time.Since(killed).Round(time.Millisecond))
	synced, okAfter := time.Now(), l.okOn(2)
	if !within(20*time.Second, func() bool { return l.okOn(2) > okAfter }) {
		// What the requests of the rejoined node's server wait on: this server's goroutines
		// (all three servers run in the test's process) and what the node runs.
		t.Fatalf("the server of the rejoined node acknowledges writes again: not within 20s; waiting:\n%s\nnode 3 runs:\n%s",
			stuckGoroutines(), processList(dsns[2]))
	}
	t.Logf("the server of the rejoined node acknowledged a write %s after the node synced", time.Since(synced).Round(time.Millisecond))
	webtest.Expect(t, servers[2].api.Do(t, http.MethodGet, "/ready", "", nil), http.StatusOK)
	time.Sleep(time.Second)
	stop()
	t.Logf("load with a node killed: %s; longest pause between acknowledged writes of servers 0 and 1: %s",
		l.summary(), l.longestPause(killed.Add(-time.Second)).Round(time.Millisecond))
	for i := range 2 {
		if n := l.countOn(i, http.StatusInternalServerError) + l.countOn(i, http.StatusServiceUnavailable) + l.countOn(i, -1); n > 0 {
			t.Errorf("server %d, on a node that stayed up, failed %d writes", i, n)
		}
	}
	if n := l.countOn(2, http.StatusInternalServerError); n > 0 {
		t.Errorf("the server of the killed node answered 500 to %d writes", n)
	}
	l.check(t, dsns, "after the node rejoined")
	t.Logf("certification failures and brute-force aborts (all nodes): %d; the test took %s", certFailures(t, dsns)-conflicts,
		time.Since(began).Round(time.Millisecond))
	for i, s := range servers {
		if log := s.log.String(); i < 2 && strings.Contains(log, "level=ERROR") {
			t.Errorf("server %d:\n%s", i, log)
		}
	}
}

// within polls cond until it holds (true) or timeout passes (false).
func within(timeout time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(timeout); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

// stuckGoroutines lists, once per distinct stack, the goroutines of the process that serve a
// request or talk to the database, with how many share the stack: where requests wait.
func stuckGoroutines() string {
	buf := make([]byte, 8<<20)
	buf = buf[:runtime.Stack(buf, true)]
	count := map[string]int{}
	var order []string
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		inRequest := strings.Contains(g, "net/http.(*conn).serve") && strings.Contains(g, "agentcards/web.")
		idle := strings.Contains(g, "sql.(*DB).connectionOpener") || strings.Contains(g, "sql.(*DB).connectionCleaner")
		if !inRequest && (idle || !strings.Contains(g, "database/sql.")) {
			continue
		}
		head, stack, _ := strings.Cut(g, "\n")
		_, state, _ := strings.Cut(head, "[")
		stack, _, _ = strings.Cut(stack, "\ncreated by ")
		// The functions only, without their arguments and files: one line a frame.
		var frames []string
		for line := range strings.Lines(stack) {
			if !strings.HasPrefix(line, "\t") {
				frames = append(frames, "  "+callArgs.ReplaceAllString(strings.TrimSpace(line), "(…)"))
			}
		}
		key := "[" + state + "\n" + strings.Join(frames, "\n")
		if count[key] == 0 {
			order = append(order, key)
		}
		count[key]++
	}
	var b strings.Builder
	for _, k := range order {
		fmt.Fprintf(&b, "%d× %s\n", count[k], k)
	}
	return b.String()
}

// callArgs are the arguments of a call in a goroutine's stack.
var callArgs = regexp.MustCompile(`\([^()]*\)$`)

// processList is what a node runs: its connections that are not idle, with their state.
func processList(dsn string) string {
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return err.Error()
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rows, err := db.QueryContext(ctx, "SELECT ID, COMMAND, TIME, COALESCE(STATE, ''), COALESCE(INFO, '') FROM information_schema.PROCESSLIST WHERE COMMAND <> 'Sleep'")
	if err != nil {
		return err.Error()
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var id, seconds int64
		var command, state, info string
		if err := rows.Scan(&id, &command, &seconds, &state, &info); err != nil {
			return err.Error()
		}
		fmt.Fprintf(&b, "%d %s %ds %s: %.200s\n", id, command, seconds, state, info)
	}
	if err := rows.Err(); err != nil {
		return err.Error()
	}
	return b.String()
}

// hotCards are written by every server, so that writes of different nodes meet on them.
const hotCards = 4

func hotCard(i int) string { return "hot-" + strconv.Itoa(i) }

// galeraCard is the body of a card whose description carries mark.
func galeraCard(agentID string, mark int) map[string]any {
	return map[string]any{"agentId": agentID, "name": "Agent " + agentID, "description": fmt.Sprintf("Reviews pull requests, mark m%d", mark),
		"protocols": []string{"http"}, "endpoint": "https://agents.example.com/" + agentID,
		"capabilities": []any{map[string]any{"name": "review_pr"}}}
}

// ackedWrite is a write a server acknowledged: its operation and the revision it answered
// (0 for a delete).
type ackedWrite struct {
	op  string
	rev int64
}

// galeraLoad writes cards through every server and records what each acknowledged.
type galeraLoad struct {
	servers []served
	token   string

	mu       sync.Mutex
	acked    map[string][]int64    // agent -> every revision acknowledged
	last     map[string]ackedWrite // agent -> its last write, for cards only one worker writes
	unsure   map[string]bool       // agents a write of which had no answer: it may or may not have landed
	statuses []map[int]int         // per server: status -> count (-1: no answer)
	okAt     []time.Time           // when servers 0 and 1 acknowledged writes
	workers  int
}

var galeraClient = &http.Client{Timeout: 40 * time.Second}

// write sends one request to server i on the tenant's cards, and returns the status (-1 if no
// answer came) and the revision of the ETag.
func (l *galeraLoad) write(i int, method, path string, body any) (int, int64, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, l.servers[i].api.BaseURL+"/v1/tenants/acme"+path, rd)
	if err != nil {
		return -1, 0, err
	}
	req.Header.Set("Authorization", "Bearer "+l.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := galeraClient.Do(req)
	status := -1
	if err == nil {
		status = res.StatusCode
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}
	l.mu.Lock()
	l.statuses[i][status]++
	if i < 2 && status >= 200 && status < 300 {
		l.okAt = append(l.okAt, time.Now())
	}
	l.mu.Unlock()
	if err != nil {
		return status, 0, err
	}
	rev, _ := strconv.ParseInt(strings.Trim(res.Header.Get("ETag"), `"`), 10, 64)
	return status, rev, nil
}

// start runs perServer workers on each server until the function it returns is called.
func (l *galeraLoad) start(perServer int) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := range l.servers {
		for range perServer {
			l.mu.Lock()
			l.workers++
			w := l.workers
			l.mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				l.work(ctx, i, w)
			}()
		}
	}
	return func() { cancel(); wg.Wait() }
}

// work is one worker on server i: it registers cards of its own, updates and deletes them, and
// updates the hot cards, which every worker updates.
func (l *galeraLoad) work(ctx context.Context, i, w int) {
	rnd := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
	var mine []string
	next := 0
	for ctx.Err() == nil {
		var agent, method, path, op string
		var body any
		switch k := rnd.IntN(10); {
		case k < 3 || len(mine) == 0:
			next++
			agent, method, path, op = fmt.Sprintf("w%d-%d", w, next), http.MethodPost, "/cards", "create"
			body = galeraCard(agent, rnd.IntN(10))
		case k < 5:
			agent = mine[rnd.IntN(len(mine))]
			method, path, op = http.MethodPatch, "/cards/"+agent, "update"
			body = map[string]any{"description": fmt.Sprintf("Reviews pull requests, mark m%d", rnd.IntN(10))}
		case k < 6:
			j := rnd.IntN(len(mine))
			agent = mine[j]
			method, path, op = http.MethodDelete, "/cards/"+agent, "delete"
		default:
			agent = hotCard(rnd.IntN(hotCards))
			method, path, op = http.MethodPatch, "/cards/"+agent, "update"
			body = map[string]any{"description": fmt.Sprintf("Reviews pull requests, mark m%d", rnd.IntN(10))}
		}
		status, rev, _ := l.write(i, method, path, body)
		l.mu.Lock()
		switch {
		case status == http.StatusCreated || status == http.StatusOK || status == http.StatusNoContent:
			if op != "delete" {
				l.acked[agent] = append(l.acked[agent], rev)
			}
			l.last[agent] = ackedWrite{op: op, rev: rev}
		default:
			// No answer, or a failure: the write may have landed all the same (a commit cut
			// off by the kill), so the card's state is not known; it is written no more.
			if l.unsure == nil {
				l.unsure = map[string]bool{}
			}
			l.unsure[agent] = true
		}
		l.mu.Unlock()
		ok := status >= 200 && status < 300
		switch {
		case op == "create" && ok:
			mine = append(mine, agent)
		case op == "delete" || !ok:
			mine = slices.DeleteFunc(mine, func(a string) bool { return a == agent })
		}
		if !ok {
			// A server whose node is down answers at once: do not spin on it.
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
}

// count returns how many writes of every server got status.
func (l *galeraLoad) count(status int) int {
	n := 0
	for i := range l.servers {
		n += l.countOn(i, status)
	}
	return n
}

func (l *galeraLoad) countOn(i, status int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.statuses[i][status]
}

func (l *galeraLoad) count503(i int) int { return l.countOn(i, http.StatusServiceUnavailable) }

// okOn returns how many writes server i acknowledged.
func (l *galeraLoad) okOn(i int) int {
	return l.countOn(i, http.StatusCreated) + l.countOn(i, http.StatusOK) + l.countOn(i, http.StatusNoContent)
}

// ackedSince returns how many writes servers 0 and 1 acknowledged after t.
func (l *galeraLoad) ackedSince(t time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, at := range l.okAt {
		if at.After(t) {
			n++
		}
	}
	return n
}

// longestPause returns the longest time between writes servers 0 and 1 acknowledged after t.
func (l *galeraLoad) longestPause(t time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	var longest time.Duration
	prev := t
	for _, at := range slices.SortedFunc(slices.Values(l.okAt), time.Time.Compare) {
		if at.After(t) {
			longest = max(longest, at.Sub(prev))
			prev = at
		}
	}
	return longest
}

// reset forgets the statuses counted so far (what was acknowledged stays).
func (l *galeraLoad) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range l.statuses {
		l.statuses[i] = map[int]int{}
	}
}

func (l *galeraLoad) summary() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var parts []string
	for i, st := range l.statuses {
		var s []string
		for _, code := range slices.Sorted(maps.Keys(st)) {
			s = append(s, fmt.Sprintf("%d×%d", st[code], code))
		}
		parts = append(parts, fmt.Sprintf("server %d: %s", i, strings.Join(s, " ")))
	}
	return strings.Join(parts, "; ")
}

// check compares what the servers acknowledged with every node's database, and each server's
// search with the database, polling until the servers' followers catch up.
func (l *galeraLoad) check(t *testing.T, dsns []string, when string) {
	t.Helper()
	dbs := openNodes(t, dsns)
	l.mu.Lock()
	defer l.mu.Unlock()
	var want map[string]int64
	for n, db := range dbs {
		got := nodeCards(t, db)
		if want == nil {
			want = got
		} else if !maps.Equal(got, want) {
			t.Fatalf("%s: node %d holds other cards than node 0:\n%v\n%v", when, n, got, want)
		}
	}
	// Every acknowledged revision of a card is in the change feed, written in the write's
	// transaction, and no revision was acknowledged twice (an update lost to a conflict).
	feed := map[string]map[int64]bool{}
	rows, err := dbs[0].Query("SELECT agent_id, revision FROM card_changes WHERE tenant_id = 'acme' AND op <> 'delete'")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var a string
		var r int64
		if err := rows.Scan(&a, &r); err != nil {
			t.Fatal(err)
		}
		if feed[a] == nil {
			feed[a] = map[int64]bool{}
		}
		feed[a][r] = true
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	acks := 0
	for a, revs := range l.acked {
		seen := map[int64]bool{}
		for _, r := range revs {
			acks++
			if seen[r] {
				t.Errorf("%s: revision %d of %s acknowledged twice", when, r, a)
			}
			seen[r] = true
			if !feed[a][r] {
				t.Errorf("%s: acknowledged revision %d of %s is not in the change feed", when, r, a)
			}
			if cur, ok := want[a]; ok && cur < r {
				t.Errorf("%s: %s is at revision %d, below the acknowledged %d", when, a, cur, r)
			}
		}
	}
	// A card only one worker wrote is as its last acknowledged write left it.
	for a, w := range l.last {
		if l.unsure[a] || strings.HasPrefix(a, "hot-") {
			continue
		}
		cur, ok := want[a]
		switch {
		case w.op == "delete" && ok:
			t.Errorf("%s: %s was deleted, and is at revision %d", when, a, cur)
		case w.op != "delete" && cur != w.rev:
			t.Errorf("%s: %s is at revision %d, not the acknowledged %d", when, a, cur, w.rev)
		}
	}
	t.Logf("%s: %d acknowledged revisions of %d cards checked; %d cards stored", when, acks, len(l.acked), len(want))
	for i, s := range l.servers {
		var got map[string]int64
		began := time.Now()
		for {
			got = l.searched(t, s)
			if maps.Equal(got, want) || time.Since(began) > 15*time.Second {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if !maps.Equal(got, want) {
			t.Errorf("%s: server %d's search differs from the database after %s:\n%s", when, i, time.Since(began), diffCards(got, want))
		} else {
			t.Logf("%s: server %d's search agrees with the database after %s", when, i, time.Since(began).Round(time.Millisecond))
		}
	}
}

// autoIncrement returns each node's auto_increment_increment and auto_increment_offset.
func autoIncrement(t *testing.T, dsns []string) string {
	t.Helper()
	var out []string
	for _, db := range openNodes(t, dsns) {
		var inc, off int
		if err := db.QueryRow("SELECT @@auto_increment_increment, @@auto_increment_offset").Scan(&inc, &off); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%d/%d", inc, off))
	}
	return strings.Join(out, " ")
}

// openNodes opens a pool on each node, closed when the test ends. Its reads wait until the node
// has applied every write committed before them (wsrep_sync_wait).
func openNodes(t *testing.T, dsns []string) []*sql.DB {
	t.Helper()
	dbs := make([]*sql.DB, len(dsns))
	for i, dsn := range dsns {
		cfg, err := gomysql.ParseDSN(dsn)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Params = map[string]string{"wsrep_sync_wait": "1"}
		if dbs[i], err = sql.Open("mysql", cfg.FormatDSN()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = dbs[i].Close() })
	}
	return dbs
}

// nodeCards reads the tenant's cards from a node: agent -> revision.
func nodeCards(t *testing.T, db *sql.DB) map[string]int64 {
	t.Helper()
	rows, err := db.Query("SELECT agent_id, revision FROM cards WHERE tenant_id = 'acme'")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var a string
		var r int64
		if err := rows.Scan(&a, &r); err != nil {
			t.Fatal(err)
		}
		out[a] = r
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// searched lists the tenant's cards through a server's search, every page: agent -> revision.
func (l *galeraLoad) searched(t *testing.T, s served) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	cursor := ""
	for {
		path := "/v1/tenants/acme/cards?limit=100"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		r := s.api.Do(t, http.MethodGet, path, l.token, nil)
		webtest.Expect(t, r, http.StatusOK)
		var page struct {
			Items []struct {
				Card struct {
					AgentID  string `json:"agentId"`
					Revision int64  `json:"revision"`
				} `json:"card"`
			} `json:"items"`
			NextCursor string `json:"nextCursor"`
		}
		r.JSON(t, &page)
		for _, it := range page.Items {
			out[it.Card.AgentID] = it.Card.Revision
		}
		if page.NextCursor == "" {
			return out
		}
		cursor = page.NextCursor
	}
}

func diffCards(got, want map[string]int64) string {
	var d []string
	for a, r := range want {
		if g, ok := got[a]; !ok || g != r {
			d = append(d, fmt.Sprintf("%s: searched %d (found %v), stored %d", a, g, ok, r))
		}
	}
	for a, r := range got {
		if _, ok := want[a]; !ok {
			d = append(d, fmt.Sprintf("%s: searched %d, not stored", a, r))
		}
	}
	slices.Sort(d)
	return strings.Join(d, "\n")
}

// certFailures sums, over the nodes, the transactions Galera aborted for a conflict with another
// node's: those that failed certification, and those a replicated write aborted.
func certFailures(t *testing.T, dsns []string) int {
	t.Helper()
	n := 0
	for _, db := range openNodes(t, dsns) {
		for _, v := range []string{"wsrep_local_cert_failures", "wsrep_local_bf_aborts"} {
			s, err := galera.Status(context.Background(), db, v)
			if err != nil {
				t.Fatal(err)
			}
			c, _ := strconv.Atoi(s)
			n += c
		}
	}
	return n
}

// problems returns up to n of the log's warnings and errors, each message once.
func problems(log string, n int) string {
	seen := map[string]bool{}
	var out []string
	for line := range strings.Lines(log) {
		if !strings.Contains(line, "level=ERROR") && !strings.Contains(line, "level=WARN") {
			continue
		}
		_, msg, _ := strings.Cut(line, "msg=")
		msg, _, _ = strings.Cut(msg, " requestId=")
		_, e, _ := strings.Cut(line, " err=")
		if key := msg + e; !seen[key] && len(out) < n {
			seen[key] = true
			out = append(out, line)
		}
	}
	return strings.Join(out, "")
}
