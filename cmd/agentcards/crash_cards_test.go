package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/web/webtest"
)

// cardCrashLoad is how many writes TestKillKeepsCardWrites sees acknowledged in a round before
// the kill comes, up to 5 ms later.
const cardCrashLoad = 200

// cardState is a card as a write left it: its revision and the description that write gave it,
// or gone (deleted, or never created).
type cardState struct {
	gone     bool
	revision int64
	desc     string
}

// writerLog is one writer's cards by agent id, and the card it is writing now (which it goes on
// writing after a restart).
type writerLog struct {
	cards   map[string]*cardHistory
	current string
}

// cardHistory is what one writer knows of its card: the state of the last write the server
// acknowledged, and, when the server died during a write, the state that write would have left
// (either may be what the server kept: it died before or after the commit).
type cardHistory struct {
	acked   cardState
	pending *cardState
}

// TestKillKeepsCardWrites kills the server (SIGKILL) while concurrent writers register, patch
// (with and without If-Match), replace and delete cards, several times, starting it again on the
// same database each time. Every write the server acknowledged must be found after the restart at
// the revision it answered, with its content; a write cut off by the kill may have landed or not,
// but nothing else.
func TestKillKeepsCardWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := binary(t)
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		env := crashEnv(t, dialect)
		work := t.TempDir()
		srv, api, alice := crashTenant(t, bin, work, env)
		// The first search loads the index, so writes also go through it before they answer.
		webtest.Expect(t, api.Do(t, "GET", "/v1/tenants/acme/cards?q=agent", alice, nil), http.StatusOK)

		// Each writer works on cards of its own, one write at a time, so at most one of its
		// writes is in doubt when the server dies.
		logs := make([]*writerLog, crashWorkers)
		for w := range logs {
			logs[w] = &writerLog{cards: map[string]*cardHistory{}}
		}
		var acked atomic.Int64
		var doubts doubtCount
		for round := range crashKills {
			if round > 0 {
				srv = startServer(t, bin, work, env)
			}
			before := acked.Load()
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for w := range crashWorkers {
				wg.Go(func() {
					writeCardsUntilGone(t, srv.base, alice, w, round, logs[w], stop, &acked)
				})
			}
			deadline := time.Now().Add(time.Minute)
			for acked.Load() < before+cardCrashLoad {
				if time.Now().After(deadline) {
					close(stop)
					wg.Wait()
					t.Fatalf("round %d: %d writes acknowledged in a minute; server log:\n%s", round, acked.Load()-before, srv.log())
				}
				time.Sleep(time.Millisecond)
			}
			time.Sleep(time.Duration(rand.IntN(5000)) * time.Microsecond) // a kill at no set moment
			srv.kill(t)
			close(stop)
			wg.Wait()
			if t.Failed() {
				t.Fatalf("round %d failed; server log:\n%s", round, srv.log())
			}
			// Settle every write in doubt by what the server kept, so the next round starts
			// from a known state (a restart may not answer for a card before it is read).
			srv = startServer(t, bin, work, env)
			_, d := checkCards(t, srv.base, alice, logs, true)
			doubts.landed += d.landed
			doubts.lost += d.lost
			srv.kill(t)
		}

		srv = startServer(t, bin, work, env)
		api = webtest.Client{BaseURL: srv.base}
		n, _ := checkCards(t, srv.base, alice, logs, false)
		// The index built at start must agree with the rows: a search lists exactly the cards
		// that exist.
		var page struct{ Total int }
		r := api.Do(t, "GET", "/v1/tenants/acme/cards?limit=1", alice, nil)
		webtest.Expect(t, r, http.StatusOK)
		r.JSON(t, &page)
		if page.Total != n {
			t.Errorf("a search lists %d cards; %d exist", page.Total, n)
		}
		t.Logf("%d kills, %d writes acknowledged, %d cut off by a kill (%d of them kept), %d cards at the end",
			crashKills, acked.Load(), doubts.landed+doubts.lost, doubts.landed, n)
	})
}

// writeCardsUntilGone makes writes to writer w's cards until stop is closed or the server stops
// answering: it registers a card, patches it a few times (with If-Match, or without), replaces
// it or deletes it, and starts another. It notes each acknowledged write in history, and the one
// cut off by the kill as pending.
func writeCardsUntilGone(t *testing.T, base, token string, w, round int, log *writerLog, stop <-chan struct{}, acked *atomic.Int64) {
	client := &http.Client{Timeout: 30 * time.Second}
	defer client.CloseIdleConnections()
	rng := rand.New(rand.NewPCG(uint64(w), uint64(round)))
	seq := 0
	for {
		select {
		case <-stop:
			return
		default:
		}
		seq++
		desc := fmt.Sprintf("w%d r%d s%d", w, round, seq)
		h := log.cards[log.current]
		var method, path, ifMatch string
		var body any
		var want int
		var next cardState
		switch {
		case h == nil || h.acked.gone:
			log.current = fmt.Sprintf("w%d-r%d-s%d", w, round, seq)
			h = &cardHistory{acked: cardState{gone: true}}
			log.cards[log.current] = h
			method, path, want = "POST", "/v1/tenants/acme/cards", http.StatusCreated
			body = map[string]any{"agentId": log.current, "name": "Card " + log.current, "description": desc,
				"protocols": []string{"http"}, "endpoint": "https://agents.example.com/" + log.current}
			next = cardState{revision: 1, desc: desc}
		default:
			path = "/v1/tenants/acme/cards/" + log.current
			next = cardState{revision: h.acked.revision + 1, desc: desc}
			switch k := rng.IntN(10); {
			case k < 6:
				method, want, body = "PATCH", http.StatusOK, map[string]any{"description": desc}
				if k < 3 {
					ifMatch = strconv.Quote(strconv.FormatInt(h.acked.revision, 10))
				}
			case k < 8:
				method, want = "PUT", http.StatusOK
				body = map[string]any{"agentId": log.current, "name": "Card " + log.current, "description": desc,
					"protocols": []string{"a2a"}, "endpoint": "https://agents.example.com/" + log.current}
			default:
				method, want, next = "DELETE", http.StatusNoContent, cardState{gone: true}
			}
		}
		h.pending = &next
		status, answer, err := send(client, base, token, method, path, ifMatch, body)
		if err != nil {
			return // killed: the write is in doubt and stays pending
		}
		if status != want {
			t.Errorf("%s %s: status %d, want %d: %s", method, path, status, want, answer)
			return
		}
		if !next.gone {
			var c struct{ Revision int64 }
			if err := json.Unmarshal(answer, &c); err != nil || c.Revision != next.revision {
				t.Errorf("%s %s answered revision %d (%v), want %d", method, path, c.Revision, err, next.revision)
				return
			}
		}
		h.acked, h.pending = next, nil
		acked.Add(1)
	}
}

// send makes one request; an error means no complete answer came.
func send(client *http.Client, base, token, method, path, ifMatch string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if method == "PATCH" {
		req.Header.Set("Content-Type", "application/merge-patch+json")
	} else if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if ifMatch != "" {
		req.Header.Set("If-Match", ifMatch)
	}
	res, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return 0, nil, err
	}
	return res.StatusCode, b, nil
}

// checkCards reads every card the writers wrote and checks it against its history: the
// acknowledged state, or the pending one. With settle, a card found in its pending state
// becomes acknowledged in it. It returns how many cards exist.
func checkCards(t *testing.T, base, token string, logs []*writerLog, settle bool) (exist int, doubts doubtCount) {
	t.Helper()
	client := &http.Client{Timeout: 30 * time.Second}
	defer client.CloseIdleConnections()
	for _, log := range logs {
		for id, h := range log.cards {
			status, answer, err := send(client, base, token, "GET", "/v1/tenants/acme/cards/"+id, "", nil)
			if err != nil {
				t.Fatalf("GET %s: %v", id, err)
			}
			var got cardState
			switch status {
			case http.StatusNotFound:
				got.gone = true
			case http.StatusOK:
				var c struct {
					Revision    int64
					Description string
				}
				if err := json.Unmarshal(answer, &c); err != nil {
					t.Fatalf("GET %s: %s: %v", id, answer, err)
				}
				got = cardState{revision: c.Revision, desc: c.Description}
				exist++
			default:
				t.Fatalf("GET %s: status %d: %s", id, status, answer)
			}
			switch {
			case got == h.acked:
				if h.pending != nil {
					doubts.lost++
				}
				h.pending = nil
			case h.pending != nil && got == *h.pending:
				doubts.landed++
				if settle {
					h.acked, h.pending = got, nil
				}
			default:
				t.Errorf("card %s after the kill: %+v; the last acknowledged write left %+v (in doubt: %+v)", id, got, h.acked, h.pending)
			}
		}
	}
	return exist, doubts
}

// doubtCount counts the writes in doubt at a kill (sent, not answered) by what became of them.
type doubtCount struct{ landed, lost int }
