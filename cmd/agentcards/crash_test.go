package main

import (
	"bytes"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/agentcards/agentcards/cards/agenttest"
	"github.com/agentcards/agentcards/migrations"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/web/webtest"
)

// TestKillKeepsDelegations kills the server under load crashKills times; in each round
// crashWorkers callers delegate until the agent has received crashLoad more delegations, and
// the kill comes up to 5 ms later.
const (
	crashKills   = 5
	crashLoad    = 60
	crashWorkers = 8
)

// TestKillKeepsDelegations kills the server (SIGKILL: no drain, no deferred close) while sync
// and async delegations are on their way, several times, starting it again on the same database
// each time. A delegation is recorded durably before it is sent, and its outcome before it is
// answered, so once the server is back every delegation the agent received has its record, and
// every sync delegation the server answered as completed is recorded completed.
func TestKillKeepsDelegations(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := binary(t)
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		env := crashEnv(t, dialect,
			"AGENTCARDS_OUTBOUND_ALLOW=127.0.0.1/32",
			"AGENTCARDS_DELEGATION_RATE_PER_SECOND=0", // no limit: the load is the point
		)
		work := t.TempDir()
		agent := newRecordingAgent(t)

		srv, api, alice := crashTenant(t, bin, work, env)
		card := map[string]any{"agentId": "reviewer", "name": "Reviewer", "protocols": []string{"http"},
			"endpoint": agent.Endpoint(), "capabilities": []any{map[string]any{"name": "review_pr"}}}
		webtest.Expect(t, api.Do(t, "POST", "/v1/tenants/acme/cards", alice, card), http.StatusCreated)

		answered := &answers{status: map[string]string{}}
		for round := range crashKills {
			if round > 0 {
				srv = startServer(t, bin, work, env)
			}
			before := agent.Calls() // a delegation reaches the agent once: its calls count them
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for w := range crashWorkers {
				wg.Go(func() { delegateUntilGone(t, srv.base, alice, w%2 == 0, stop, answered) })
			}
			deadline := time.Now().Add(time.Minute)
			for agent.Calls() < before+crashLoad {
				if time.Now().After(deadline) {
					close(stop)
					t.Fatalf("round %d: the agent received %d delegations in a minute; server log:\n%s", round, agent.Calls()-before, srv.log())
				}
				time.Sleep(time.Millisecond)
			}
			time.Sleep(time.Duration(rand.IntN(5000)) * time.Microsecond) // a kill at no set moment
			srv.kill(t)
			close(stop)
			wg.Wait()
		}

		srv = startServer(t, bin, work, env)
		stored := listDelegations(t, srv.base, alice)
		seen := delegationIDs(agent)
		open := 0
		for id := range seen {
			st, ok := stored[id]
			if !ok {
				t.Errorf("delegation %s reached the agent but has no record after the kill", id)
			}
			if st == "running" || st == "pending" {
				open++
			}
		}
		for id, want := range answered.all() {
			got, ok := stored[id]
			switch {
			case !ok:
				t.Errorf("delegation %s was answered %s but has no record after the kill", id, want)
			case want == "completed" && got != "completed":
				t.Errorf("delegation %s was answered completed but is recorded %s", id, got)
			}
		}
		t.Logf("%d kills: the agent received %d delegations (%d were still open when the server died), %d were answered, %d are recorded",
			crashKills, len(seen), open, len(answered.all()), len(stored))
	})
}

// crashTenant starts the server on env in work, creates tenant acme with alice as its admin, and
// returns the server, a client of it and alice's token.
func crashTenant(t *testing.T, bin, work string, env []string) (*server, webtest.Client, string) {
	srv := startServer(t, bin, work, env)
	root := mint(t, bin, work, env, "--subject", "root", "--platform-admin")
	api := webtest.Client{BaseURL: srv.base}
	api.CreateTenant(t, root, "acme", "alice")
	return srv, api, mint(t, bin, work, env, "--subject", "alice", "--tenant", "acme")
}

// crashEnv is the environment of a server a kill test starts on dialect, with extra settings:
// loopback ports, warnings only, and on Postgres or MySQL a schema (database) of its own, which
// serve migrates. SQLite is the default, a file in the data directory under the server's work
// directory.
func crashEnv(t *testing.T, dialect string, extra ...string) []string {
	env := append(cleanEnv(),
		"AGENTCARDS_SERVER_ADDR=127.0.0.1:0", "AGENTCARDS_SERVER_METRICS_ADDR=127.0.0.1:0",
		"AGENTCARDS_LOG_LEVEL=warn",
	)
	if dialect != migrations.SQLite {
		_, dsn := storagetest.EmptyDatabase(t, dialect)
		env = append(env, "AGENTCARDS_DATABASE_DRIVER="+dialect, "AGENTCARDS_DATABASE_DSN="+dsn)
	}
	return append(env, extra...)
}

// newRecordingAgent is a loopback agent that takes tasks as the kill tests need: it answers a
// sync task after up to 2 ms (so that calls are in flight when the server dies), an async one
// with 202 at once. It records each task before answering.
func newRecordingAgent(t *testing.T) *agenttest.Agent {
	return agenttest.New(t, func(w http.ResponseWriter, _ *http.Request, got agenttest.Request) {
		var task struct {
			DelegationID string `json:"delegationId"`
			CallbackURL  string `json:"callbackUrl"`
		}
		if err := json.NewDecoder(bytes.NewReader(got.Body)).Decode(&task); err != nil || task.DelegationID == "" {
			t.Errorf("the agent received a task without a delegation id (%v)", err)
			http.Error(w, "no delegationId", http.StatusBadRequest)
			return
		}
		if task.CallbackURL != "" {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"result": "reviewed"}`)
	})
}

// delegationIDs are the ids of the delegations the agent received.
func delegationIDs(a *agenttest.Agent) map[string]bool {
	seen := map[string]bool{}
	for _, r := range a.Requests() {
		if r.Task.DelegationID != "" {
			seen[r.Task.DelegationID] = true
		}
	}
	return seen
}

// answers are the delegations the server answered, with the status it answered.
type answers struct {
	mu     sync.Mutex
	status map[string]string
}

func (a *answers) add(id, status string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.status[id] = status
}

func (a *answers) all() map[string]string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string]string, len(a.status))
	for id, st := range a.status {
		out[id] = st
	}
	return out
}

// delegateUntilGone posts delegations (sync, or async when async is set) to the server at base
// until stop is closed or the server stops answering, and notes each answer.
func delegateUntilGone(t *testing.T, base, token string, async bool, stop <-chan struct{}, answered *answers) {
	mode, want := "sync", http.StatusOK
	if async {
		mode, want = "async", http.StatusAccepted
	}
	body, _ := json.Marshal(map[string]string{"agentId": "reviewer", "capability": "review_pr", "task": "Review PR 12", "mode": mode})
	client := &http.Client{Timeout: 30 * time.Second}
	defer client.CloseIdleConnections()
	for {
		select {
		case <-stop:
			return
		default:
		}
		req, err := http.NewRequest("POST", base+"/v1/tenants/acme/delegations", bytes.NewReader(body))
		if err != nil {
			t.Error(err)
			return
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := client.Do(req)
		if err != nil {
			return // killed: the connection is refused or cut
		}
		b, err := io.ReadAll(res.Body)
		_ = res.Body.Close()
		if err != nil {
			return // killed while it answered
		}
		if res.StatusCode != want {
			t.Errorf("%s delegation: status %d, want %d: %s", mode, res.StatusCode, want, b)
			return
		}
		var d struct{ ID, Status string }
		if err := json.Unmarshal(b, &d); err != nil || d.ID == "" {
			t.Errorf("%s delegation: the answer %s: %v", mode, b, err)
			return
		}
		answered.add(d.ID, d.Status)
	}
}

// listDelegations reads every delegation record of tenant acme through the API, page by page:
// id to status.
func listDelegations(t *testing.T, base, token string) map[string]string {
	t.Helper()
	api := webtest.Client{BaseURL: base}
	out := map[string]string{}
	cursor := ""
	for {
		path := "/v1/tenants/acme/delegations?limit=200"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		r := api.Do(t, "GET", path, token, nil)
		webtest.Expect(t, r, http.StatusOK)
		var page struct {
			Items []struct {
				ID      string `json:"id"`
				AgentID string `json:"agentId"`
				Status  string `json:"status"`
			} `json:"items"`
			NextCursor string `json:"nextCursor"`
		}
		r.JSON(t, &page)
		for _, d := range page.Items {
			if d.AgentID != "reviewer" {
				t.Errorf("record %s names agent %q", d.ID, d.AgentID)
			}
			out[d.ID] = d.Status
		}
		if page.NextCursor == "" {
			return out
		}
		cursor = page.NextCursor
	}
}
