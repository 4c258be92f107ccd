package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentcards/agentcards/web/webtest"
)

// lockedBuffer is a buffer one goroutine writes while another reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestCLIWatch: `cards watch` prints each change as it commits, a JSON line with its cursor, and
// exits 0 when interrupted; --since resumes after a printed cursor.
func TestCLIWatch(t *testing.T) {
	e := newCLIEnv(t, false)
	e.ok(t, e.root, nil, "tenants", "create", "--id", "acme", "--name", "Acme", "--admins", "alice")
	alice := webtest.Mint(t, webtest.Tokens(t), "alice", "acme", false)
	watch := func(args ...string) (*lockedBuffer, func() int) {
		ctx, cancel := context.WithCancel(context.Background())
		var stdout, stderr lockedBuffer
		code := make(chan int, 1)
		go func() {
			code <- cli(ctx, append([]string{"cards", "watch", "-o", "json"}, args...), &stdout, &stderr,
				[]string{"AGENTCARDS_SERVER=" + e.base, "AGENTCARDS_TOKEN=" + alice})
		}()
		return &stdout, func() int {
			cancel()
			select {
			case c := <-code:
				if c != 0 {
					t.Errorf("watch exited %d: %s", c, stderr.String())
				}
				return c
			case <-time.After(10 * time.Second):
				t.Fatal("watch did not exit when interrupted")
			}
			return -1
		}
	}
	lines := func(out *lockedBuffer, n int) []watchedChange {
		t.Helper()
		var got []watchedChange
		webtest.Eventually(t, 10*time.Second, "the changes printed", func() bool {
			got = nil
			for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
				var c watchedChange
				if line != "" && json.Unmarshal([]byte(line), &c) == nil {
					got = append(got, c)
				}
			}
			return len(got) >= n
		})
		return got
	}
	// From the feed's present cursor: the write shows whenever the stream opens.
	var page struct{ NextCursor string }
	e.ok(t, alice, &page, "cards", "changes")
	out, stop := watch("--since", page.NextCursor)
	e.ok(t, alice, nil, "cards", "register", "--agentId", "w", "--name", "W", "--protocols", "http", "--endpoint", "https://agents.example.com/w")
	first := lines(out, 1)[0]
	if first.Op != "upsert" || first.Cursor == "" || first.Card == nil {
		t.Fatalf("first line %+v", first)
	}
	stop()
	e.ok(t, alice, nil, "cards", "remove", "--agentId", first.AgentID)
	out, stop = watch("--since", first.Cursor)
	if got := lines(out, 1); got[len(got)-1].Op != "remove" || got[len(got)-1].AgentID != "w" {
		t.Fatalf("after --since: %s", out.String())
	}
	stop()
}
