package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/web/api"
	"github.com/agentcards/agentcards/web/client"
	"github.com/agentcards/agentcards/web/webtest"
)

// streamKills is how many times TestKillStreamResumes kills the server.
const streamKills = 3

// streamMirror is what a client of the live stream holds: per agent, the state of the highest
// revision it has seen, and the cursor after the last change it took.
type streamMirror struct {
	mu     sync.Mutex
	cards  map[string]cardState
	cursor string
	// taken counts the changes received.
	taken int
}

// apply takes a change as docs/search.md says a client does: an upsert of a higher revision, or
// a removal of at least the revision held; anything else it already has.
func (m *streamMirror) apply(ch client.Change) {
	m.mu.Lock()
	defer m.mu.Unlock()
	held, ok := m.cards[ch.AgentID]
	switch {
	case ch.Op == "upsert" && (!ok || ch.Revision > held.revision):
		m.cards[ch.AgentID] = cardState{revision: ch.Revision, desc: ch.Card.Description}
	case ch.Op == "remove" && (!ok || ch.Revision >= held.revision):
		m.cards[ch.AgentID] = cardState{gone: true, revision: ch.Revision}
	}
	m.cursor = ch.Cursor
	m.taken++
}

func (m *streamMirror) changesTaken() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.taken
}

// differences lists the cards whose state in the mirror is not the writers' acknowledged one.
func (m *streamMirror) differences(logs []*writerLog) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, log := range logs {
		for id, h := range log.cards {
			got, ok := m.cards[id]
			want := h.acked
			if want.gone {
				if ok && !got.gone {
					out = append(out, fmt.Sprintf("%s: mirror %+v, stored: gone", id, got))
				}
				continue
			}
			if got.gone || got.revision != want.revision || got.desc != want.desc {
				out = append(out, fmt.Sprintf("%s: mirror %+v, stored %+v", id, got, want))
			}
		}
	}
	return out
}

// follow runs the Go client's Watch on base from the mirror's cursor into the mirror until ctx
// ends or the watch gives up (the server was killed); done is closed then.
func (m *streamMirror) follow(ctx context.Context, base, token string) (done chan struct{}) {
	done = make(chan struct{})
	cl, err := client.New(base, client.WithToken(token))
	if err != nil {
		panic(err)
	}
	m.mu.Lock()
	since := m.cursor
	m.mu.Unlock()
	go func() {
		defer close(done)
		for ch, err := range cl.Cards.Watch(ctx, api.CardsChanges{Since: since}) {
			if err != nil {
				return
			}
			m.apply(ch)
		}
	}()
	return done
}

// TestKillStreamResumes kills the server (SIGKILL) while writers change cards and a client
// follows the live stream of the change feed, several times, starting it again on the same
// database. The client, resuming each time from the id of the last event it received, must end
// up holding every card exactly as the database holds it: every acknowledged write (and every
// write cut off by a kill that landed after all) reached it, none missing.
func TestKillStreamResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := binary(t)
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		env := crashEnv(t, dialect)
		work := t.TempDir()
		srv, apiClient, alice := crashTenant(t, bin, work, env)
		// The client follows from the feed's present, taken before any write.
		var present api.ChangePage
		r := apiClient.Do(t, "GET", "/v1/tenants/acme/cards:changes", alice, nil)
		webtest.Expect(t, r, http.StatusOK)
		r.JSON(t, &present)
		m := &streamMirror{cards: map[string]cardState{}, cursor: present.NextCursor}

		logs := make([]*writerLog, crashWorkers)
		for w := range logs {
			logs[w] = &writerLog{cards: map[string]*cardHistory{}}
		}
		var acked atomic.Int64
		for round := range streamKills {
			ctx, cancel := context.WithCancel(context.Background())
			following := m.follow(ctx, srv.base, alice)
			before, taken := acked.Load(), m.changesTaken()
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for w := range crashWorkers {
				wg.Go(func() { writeCardsUntilGone(t, srv.base, alice, w, round, logs[w], stop, &acked) })
			}
			deadline := time.Now().Add(time.Minute)
			for acked.Load() < before+cardCrashLoad {
				if time.Now().After(deadline) {
					close(stop)
					wg.Wait()
					cancel()
					t.Fatalf("round %d: %d writes acknowledged in a minute; server log:\n%s", round, acked.Load()-before, srv.log())
				}
				time.Sleep(time.Millisecond)
			}
			time.Sleep(time.Duration(rand.IntN(5000)) * time.Microsecond) // a kill at no set moment
			srv.kill(t)
			close(stop)
			wg.Wait()
			cancel()
			<-following
			if t.Failed() {
				t.Fatalf("round %d failed; server log:\n%s", round, srv.log())
			}
			if m.changesTaken() == taken {
				t.Fatalf("round %d: the stream carried none of the writes before the kill", round)
			}
			// Settle the writes cut off by the kill by what the database kept, so the next
			// round's writers start from a known state.
			srv = startServer(t, bin, work, env)
			checkCards(t, srv.base, alice, logs, true)
		}

		// Resumed from the last event received, the client must come to hold exactly what the
		// database holds.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		following := m.follow(ctx, srv.base, alice)
		deadline := time.Now().Add(30 * time.Second)
		for {
			diff := m.differences(logs)
			if len(diff) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("after resuming, %d cards differ from the database, such as %v", len(diff), diff[:min(len(diff), 5)])
			}
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
		<-following
		t.Logf("%d kills, %d writes acknowledged, %d changes received, %d cards followed", streamKills, acked.Load(), m.taken, len(m.cards))
	})
}
