package search

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/agentcards/agentcards/authz/authztest"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/tenants/paging"
)

// commitModel models a server database's change feed for the change feed's cursors: an entry
// takes its sequence number and its time when its write begins, and becomes visible, with the
// card, when the write commits, at most window later, in any order. Revisions go on across a
// removal, as the stores' tombstones keep them.
type commitModel struct {
	*feedModel // for the store methods the feed does not use
	r          *rand.Rand
	now        time.Time
	window     time.Duration
	next       int64
	entries    []modelEntry
	open       []*modelEntry
	live       map[string]cards.Card
	last       map[string]int64
	agents     []string
}

type modelEntry struct {
	Change
	at      time.Time
	visible bool
	card    cards.Card
}

func (m *commitModel) begin() {
	a := m.agents[m.r.IntN(len(m.agents))]
	for _, o := range m.open {
		if o.AgentID == a {
			return
		}
	}
	m.next++
	e := &modelEntry{Change: Change{Seq: m.next, AgentID: a}, at: m.now}
	if c, ok := m.live[a]; ok && m.r.IntN(3) == 0 {
		e.Op, e.Revision = OpDelete, c.Revision
	} else {
		m.last[a]++
		e.Op, e.Revision = "update", m.last[a]
		e.card = cards.Card{AgentID: a, Name: fmt.Sprintf("%s@%d", a, m.last[a]), Revision: m.last[a]}
	}
	m.open = append(m.open, e)
}

// commit commits the open write i.
func (m *commitModel) commit(i int) {
	e := m.open[i]
	m.open = slices.Delete(m.open, i, i+1)
	e.visible = true
	if e.Op == OpDelete {
		delete(m.live, e.AgentID)
	} else {
		m.live[e.AgentID] = e.card
	}
	m.entries = append(m.entries, *e)
}

// tick moves the clock on a second, committing the writes that would outlast the window.
func (m *commitModel) tick() {
	m.now = m.now.Add(time.Second)
	for i := len(m.open) - 1; i >= 0; i-- {
		if m.now.Sub(m.open[i].at) >= m.window-time.Second {
			m.commit(i)
		}
	}
}

func (m *commitModel) Changes(_ context.Context, _ tenants.ID, after int64, limit int) ([]Change, error) {
	var out []Change
	for _, e := range m.entries {
		if e.visible && e.Seq > after {
			out = append(out, e.Change)
		}
	}
	slices.SortFunc(out, func(a, b Change) int { return int(a.Seq - b.Seq) })
	return out[:min(len(out), limit)], nil
}

func (m *commitModel) LastSeq(context.Context, tenants.ID) (int64, error) {
	var h int64
	for _, e := range m.entries {
		if e.visible {
			h = max(h, e.Seq)
		}
	}
	return h, nil
}

// HighestSeq: the model holds one tenant.
func (m *commitModel) HighestSeq(ctx context.Context) (int64, error) { return m.LastSeq(ctx, "") }

func (m *commitModel) SeqBefore(_ context.Context, _ tenants.ID, t time.Time) (int64, error) {
	var h int64
	for _, e := range m.entries {
		if e.visible && e.at.Before(t) {
			h = max(h, e.Seq)
		}
	}
	return h, nil
}

func (m *commitModel) GetMany(_ context.Context, _ tenants.ID, ids []string) ([]cards.Card, error) {
	var out []cards.Card
	for _, id := range ids {
		if c, ok := m.live[id]; ok {
			out = append(out, c)
		}
	}
	return out, nil
}

// TestChangesCursorModel: writes commit out of the order of their sequence numbers, within the
// window, while a client takes the present cursor, lists the cards (at once or later) and
// follows the feed a page at a time; once every write has committed and the client has read two
// passes, what it holds is exactly the live cards. Thousands of seeds, paging of 1 to 4.
func TestChangesCursorModel(t *testing.T) {
	for seed := range uint64(3000) {
		r := rand.New(rand.NewPCG(seed, 7))
		m := &commitModel{feedModel: &feedModel{}, r: r, now: time.Unix(1_000_000, 0), window: 5 * time.Second,
			live: map[string]cards.Card{}, last: map[string]int64{}, agents: []string{"a", "b", "c", "d"}}
		s := &Changes{Store: m, Feed: m, Gate: admitAll{}, Authz: authztest.AllowAll{}, Window: m.window, Now: func() time.Time { return m.now }}
		limit := 1 + r.IntN(4)
		page := paging.Page{Limit: &limit}
		held := map[string]int64{}
		cardOf := map[string]string{}
		apply := func(c FeedChange) {
			switch {
			case c.Op == FeedUpsert && c.Revision > held[c.AgentID]:
				held[c.AgentID], cardOf[c.AgentID] = c.Revision, c.Card.Name
			case c.Op == FeedRemove && c.Revision >= held[c.AgentID]:
				held[c.AgentID] = c.Revision
				delete(cardOf, c.AgentID)
			}
		}
		read := func(cursor string) (string, bool) {
			p, err := s.ListChanges(caller, "t", cursor, page)
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			for _, c := range p.Changes {
				apply(c)
			}
			return p.NextCursor, p.More
		}
		for range r.IntN(20) {
			m.begin()
			m.tick()
		}
		cursor, _ := read("")
		listed := false
		for step := 0; step < 60; step++ {
			switch r.IntN(5) {
			case 0:
				m.begin()
			case 1:
				if len(m.open) > 0 {
					m.commit(r.IntN(len(m.open)))
				}
			case 2:
				m.tick()
			default:
				if !listed {
					// The list: every live card as it is now.
					for _, c := range m.live {
						if c.Revision > held[c.AgentID] {
							held[c.AgentID], cardOf[c.AgentID] = c.Revision, c.Name
						}
					}
					listed = true
					continue
				}
				cursor, _ = read(cursor)
			}
		}
		for len(m.open) > 0 {
			m.tick()
		}
		for pass := 0; pass < 2; pass++ {
			for more := true; more; {
				cursor, more = read(cursor)
			}
		}
		want := map[string]string{}
		for a, c := range m.live {
			want[a] = c.Name
		}
		if !maps.Equal(cardOf, want) {
			t.Fatalf("seed %d (limit %d): the client holds %v, the store %v", seed, limit, cardOf, want)
		}
	}
}
