package search

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/cardstest"
	"github.com/agentcards/agentcards/tenants"
)

type fentry struct {
	Change
	visible bool
}

type ftx struct {
	agent   string
	del     bool
	card    cards.Card
	seq     int64
	started time.Time // when the write began, as the service notes it for Index.Wrote
}

// feedModel models a server database for the change feed: a feed entry's seq is taken when the write begins, and both the card
// and the entry become visible when it commits; a card is locked by its open write.
type feedModel struct {
	mu      sync.Mutex
	r       *rand.Rand
	cards   map[string]cards.Card
	feed    []fentry
	next    int64
	open    []*ftx
	ids     int
	agents  []string
	stepsOn bool
	// oneWriter models SQLite: one write transaction at a time, so entries become visible in
	// sequence order.
	oneWriter bool
	// interleave, if set, runs now and then at the start of a GetMany, as another apply of the
	// index racing with the one reading (never inside itself).
	interleave   func()
	interleaving bool
	// afters records the after argument of each Changes call; failNext makes the next one fail.
	afters   []int64
	failNext bool
	// notices holds the entries committed and not yet heard of, in commit order (Postgres's
	// NOTIFY, delivered when its transaction commits).
	notices []Change
	// history, if set, holds each agent's states in commit order ("gone", or the card's
	// id@revision), starting with "gone"; own holds the writes committed whose writer has not yet applied
	// them (Index.Wrote), when keepOwn is set.
	history map[string][]string
	own     []*ftx
	keepOwn bool
	// listed holds, by agent, the position in history of its state when IDs was first called
	// (by the index's build) for agents without a card then. absentReads holds, by agent, the
	// lowest position in history at which a GetMany found no card of it, since the test last
	// took them.
	listed      map[string]int
	absentReads map[string]int
}

// state names a card's state as history does.
func state(c cards.Card, ok bool) string {
	if !ok {
		return "gone"
	}
	return fmt.Sprintf("%s@%d", c.ID, c.Revision)
}

func (f *feedModel) begin() {
	if f.oneWriter && len(f.open) > 0 {
		return // SQLite: one write transaction at a time
	}
	a := f.agents[f.r.IntN(len(f.agents))]
	for _, t := range f.open {
		if t.agent == a {
			return
		}
	}
	cur, exists := f.cards[a]
	t := &ftx{agent: a, started: time.Now()}
	switch {
	case !exists:
		f.ids++
		t.card = cards.Card{AgentID: a, Name: "n " + a, Description: fmt.Sprintf("v%d", f.ids), ID: fmt.Sprintf("id%d", f.ids), Revision: 1}
	case f.r.IntN(3) == 0:
		t.del, t.card = true, cur
	default:
		t.card = cur
		t.card.Revision++
		t.card.Description = fmt.Sprintf("%s r%d", cur.ID, t.card.Revision)
	}
	f.next++
	t.seq = f.next
	op := "update"
	if t.del {
		op = OpDelete
	} else if !exists {
		op = "create"
	}
	f.feed = append(f.feed, fentry{Change: Change{Seq: t.seq, AgentID: a, Op: op, Revision: t.card.Revision}})
	f.open = append(f.open, t)
}

func (f *feedModel) commit() {
	if len(f.open) == 0 {
		return
	}
	i := f.r.IntN(len(f.open))
	t := f.open[i]
	f.open = slices.Delete(f.open, i, i+1)
	if t.del {
		delete(f.cards, t.agent)
	} else {
		f.cards[t.agent] = t.card
	}
	if f.history != nil {
		c, ok := f.cards[t.agent]
		f.history[t.agent] = append(f.history[t.agent], state(c, ok))
	}
	if f.keepOwn {
		f.own = append(f.own, t)
	}
	for j := range f.feed {
		if f.feed[j].Seq == t.seq {
			f.feed[j].visible = true
		}
	}
	for _, e := range f.feed {
		if e.Seq == t.seq {
			f.notices = append(f.notices, e.Change)
		}
	}
}

// heard takes the notices of the entries committed so far, as Follow takes those waiting.
func (f *feedModel) heard() []Change {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := slices.Clone(f.notices)
	f.notices = f.notices[:0]
	return out
}

// follow serves notices as Follow does, half the time from the entries they carry and half the
// time by reading the feed from the lowest of them.
func (f *feedModel) follow(ctx context.Context, ix *Index, notices []Change) error {
	if len(notices) == 0 {
		return nil
	}
	if f.r.IntN(2) == 0 {
		return ix.applyNotified(ctx, "t", notices)
	}
	return ix.syncFrom(ctx, "t", true, slices.MinFunc(notices, func(a, b Change) int { return int(a.Seq - b.Seq) }).Seq)
}

func (f *feedModel) step() {
	if !f.stepsOn {
		return
	}
	for range f.r.IntN(4) {
		if f.r.IntN(2) == 0 {
			f.begin()
		} else {
			f.commit()
		}
	}
}

func (f *feedModel) Changes(ctx context.Context, tenant tenants.ID, after int64, limit int) ([]Change, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.afters = append(f.afters, after)
	if f.failNext {
		f.failNext = false
		return nil, fmt.Errorf("the feed failed")
	}
	f.step()
	var out []Change
	for _, e := range f.feed {
		if e.visible && e.Seq > after && len(out) < limit {
			out = append(out, e.Change)
		}
	}
	slices.SortFunc(out, func(a, b Change) int { return int(a.Seq - b.Seq) })
	return out, nil
}

func (f *feedModel) LastSeq(ctx context.Context, tenant tenants.ID) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.step()
	return f.highest(), nil
}

// highest is the highest seq of the visible entries; the caller holds mu.
func (f *feedModel) highest() int64 {
	var m int64
	for _, e := range f.feed {
		if e.visible {
			m = max(m, e.Seq)
		}
	}
	return m
}

// HighestSeq: the model holds one tenant; unlike LastSeq it takes no step.
func (f *feedModel) HighestSeq(context.Context) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.highest(), nil
}

func (f *feedModel) SeqBefore(ctx context.Context, tenant tenants.ID, t time.Time) (int64, error) {
	if !f.oneWriter {
		return 0, nil // Window covers the whole history
	}
	// SQLite's Window is 0: the highest entry committed now.
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.highest(), nil
}

func (f *feedModel) Create(context.Context, tenants.ID, cards.Card) (int64, error)  { panic("unused") }
func (f *feedModel) CreateMany(context.Context, tenants.ID, []cards.Prepared) error { panic("unused") }
func (f *feedModel) Get(context.Context, tenants.ID, string) (cards.Card, error)    { panic("unused") }
func (f *feedModel) Replace(context.Context, tenants.ID, cards.Card, int64) error   { panic("unused") }
func (f *feedModel) Delete(context.Context, tenants.ID, string, int64) error {
	panic("unused")
}

func (f *feedModel) CountUpTo(ctx context.Context, tenant tenants.ID, most int) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return min(len(f.cards), most), nil
}

func (f *feedModel) IDs(ctx context.Context, tenant tenants.ID) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.step()
	var ids []string
	for a := range f.cards {
		ids = append(ids, a)
	}
	slices.Sort(ids)
	if f.listed == nil {
		f.listed = map[string]int{}
		for a, h := range f.history {
			if _, ok := f.cards[a]; !ok {
				f.listed[a] = len(h) - 1
			}
		}
	}
	return ids, nil
}

func (f *feedModel) GetMany(ctx context.Context, tenant tenants.ID, ids []string) ([]cards.Card, error) {
	f.mu.Lock()
	race := f.interleave != nil && !f.interleaving && f.r.IntN(3) == 0
	f.interleaving = f.interleaving || race
	f.mu.Unlock()
	if race {
		f.interleave()
		f.mu.Lock()
		f.interleaving = false
		f.mu.Unlock()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.step()
	var out []cards.Card
	for _, id := range ids {
		if c, ok := f.cards[id]; ok {
			out = append(out, c)
		} else if h, ok := f.history[id]; ok {
			if p, ok := f.absentReads[id]; !ok || len(h)-1 < p {
				if f.absentReads == nil {
					f.absentReads = map[string]int{}
				}
				f.absentReads[id] = len(h) - 1
			}
		}
	}
	return out, nil
}

// TestSyncSkipRuleModel checks the rule that lets a sync skip feed entries whose revision the
// index holds, against a model of a server database's ordering: a write takes its sequence number
// when it begins, and its card and entry appear together when it commits, in any order, while
// the index is built and synced. Creates, updates, deletes and re-creates (whose revisions start
// again) of a few agents, over 30,000 seeds: once everything has committed and been synced, the
// index holds exactly the store's cards, and all along each agent's card in the index moved only
// forward through the states the store had (never back to an older one, nor a deleted card
// back). The real databases are tested elsewhere (storage, and the two-replica web tests); this
// checks the rule under interleavings they cannot be made to produce on demand.
func TestSyncSkipRuleModel(t *testing.T) {
	for _, withWritten := range []bool{false, true} {
		t.Run(fmt.Sprintf("written=%v", withWritten), func(t *testing.T) { syncModel(t, modelRun{written: withWritten}, 30000) })
	}
	// SQLite's shape: one writer, entries visible in sequence order, and no window read again
	// (which, with writes committing out of order, loses some: the window is needed there).
	t.Run("one writer, no window", func(t *testing.T) { syncModel(t, modelRun{written: true, oneWriter: true}, 10000) })
	// Postgres with LISTEN: every sync is one notices asked for, applying the entries they carry
	// or reading only from the lowest of them on (no window), and at the end the notices alone,
	// with no full sync, leave the index exact.
	t.Run("notices only", func(t *testing.T) { syncModel(t, modelRun{written: true, notices: true}, 30000) })
	// Writes apply the cards they wrote as they are (Index.Wrote), in any order after they
	// committed, some never (a writer that failed before it applied).
	t.Run("wrote", func(t *testing.T) { syncModel(t, modelRun{written: true, wrote: true}, 30000) })
	t.Run("wrote, one writer, no window", func(t *testing.T) {
		syncModel(t, modelRun{written: true, wrote: true, oneWriter: true}, 10000)
	})
	t.Run("wrote, notices only", func(t *testing.T) { syncModel(t, modelRun{written: true, wrote: true, notices: true}, 30000) })
	// More agents than writes per round: new cards whose agent the index has not touched since
	// its build, the case where a write installs a card the index never held.
	t.Run("wrote, six agents", func(t *testing.T) { syncModel(t, modelRun{written: true, wrote: true, agents: 6}, 10000) })
	t.Run("wrote, six agents, one writer, no window", func(t *testing.T) {
		syncModel(t, modelRun{written: true, wrote: true, oneWriter: true, agents: 6}, 10000)
	})
}

// modelRun says what a run of the model of TestSyncSkipRuleModel does besides syncs: writes of
// this replica apply their agents' current cards (Index.Written) when written is set, and the
// cards they wrote (Index.Wrote) when wrote is set; syncs are asked for by notices of committed
// entries (Follow on Postgres) instead of full ones when notices is set; one write is open at a
// time when oneWriter is set.
type modelRun struct {
	written, wrote, oneWriter, notices bool
	agents                             int // 2 if 0
}

// syncModel runs the model of TestSyncSkipRuleModel over seeds.
func syncModel(t *testing.T, m modelRun, seeds uint64) {
	for seed := range seeds {
		s := newModelSeed(t, m, seed)
		s.forward()
		for range 20 {
			s.writeOrSync()
			s.forward()
		}
		s.quiesce()
		s.forward()
		s.checkExact()
	}
}

// modelSeed is one seed's run of the model of TestSyncSkipRuleModel: the store and its feed, the
// index built over them, and how far forward checks each agent's card in the index has moved.
type modelSeed struct {
	t    *testing.T
	m    modelRun
	seed uint64
	ctx  context.Context
	f    *feedModel
	ix   *Index
	e    *indexEntry
	// pos is, by agent, the position in its history of the state the index holds: for an
	// agent without a card when the build listed them, at least the state then. An absence
	// installed since the last check was read since then (every apply reads after the check
	// before it), so it is at least the lowest absence read since.
	pos       map[string]int
	installed map[string]uint64
}

// newModelSeed makes the seed's store, runs 10 steps of writes on it, and builds the index while
// writes go on; with m.written, a write's read of the store races with other applies.
func newModelSeed(t *testing.T, m modelRun, seed uint64) *modelSeed {
	agents := []string{"a", "b", "c", "d", "e", "f"}[:max(m.agents, 2)]
	f := &feedModel{r: rand.New(rand.NewPCG(seed, 1)), cards: map[string]cards.Card{}, agents: agents,
		oneWriter: m.oneWriter, keepOwn: m.wrote, history: map[string][]string{}}
	for _, a := range agents {
		f.history[a] = []string{"gone"}
	}
	f.stepsOn = true
	for range 10 {
		f.step()
	}
	ix := NewIndex(f, f)
	ix.Window = time.Hour
	if m.oneWriter {
		ix.Window = 0
	}
	ctx := context.Background()
	e, err := ix.entry(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	s := &modelSeed{t: t, m: m, seed: seed, ctx: ctx, f: f, ix: ix, e: e, pos: maps.Clone(f.listed), installed: map[string]uint64{}}
	if m.written {
		f.interleave = s.interleave
	}
	return s
}

// forward checks that each agent's card in the index is one of the store's states at or after the
// one it held at the last check (never an older one, nor a deleted card back).
func (s *modelSeed) forward() {
	f, e := s.f, s.e
	for _, a := range f.agents {
		v, ok := e.x.Held(a)
		held := "gone"
		if ok {
			held = fmt.Sprintf("%s@%d", v.CardID, v.Revision)
		}
		if r, read := f.absentReads[a]; read && !ok && e.applied[a] != s.installed[a] {
			s.pos[a] = max(s.pos[a], r)
		}
		s.installed[a] = e.applied[a]
		h, p := f.history[a], s.pos[a]
		for p < len(h) && h[p] != held {
			p++
		}
		if p == len(h) {
			s.t.Fatalf("seed %d: the index holds %s of %q, not one of the store's states since %q: %v", s.seed, held, a, h[s.pos[a]], h)
		}
		s.pos[a] = p
	}
	clear(f.absentReads)
}

// apply is one apply of a write of this replica: the card it wrote (Wrote), or what the
// store holds now (Written).
func (s *modelSeed) apply() error {
	f := s.f
	if s.m.wrote && len(f.own) > 0 && f.r.IntN(4) != 0 {
		i := f.r.IntN(len(f.own))
		w := f.own[i]
		f.own = slices.Delete(f.own, i, i+1)
		if w.del {
			return s.ix.Written(s.ctx, "t", w.agent) // a delete reads back, as the service's do
		}
		return s.ix.Wrote(s.ctx, "t", w.started, w.card)
	}
	return s.ix.Written(s.ctx, "t", f.agents[f.r.IntN(len(f.agents))])
}

// interleave is a write's read, made outside the index's lock, racing with other applies (a read
// made under the lock cannot: this model runs one thing at a time).
func (s *modelSeed) interleave() {
	if !s.e.syncMu.TryLock() {
		return
	}
	s.e.syncMu.Unlock()
	var err error
	if s.f.r.IntN(2) == 0 {
		err = s.apply()
	} else if !s.m.notices {
		err = s.ix.Sync(s.ctx, "t")
	} else {
		err = s.f.follow(s.ctx, s.ix, s.f.heard())
	}
	if err != nil {
		s.t.Error(err)
	}
	s.forward()
}

// writeOrSync is one move while writes commit around it: a write of this replica applies its own
// card (Written), or the follower syncs the rest.
func (s *modelSeed) writeOrSync() {
	switch {
	case s.m.written && s.f.r.IntN(2) == 0:
		if err := s.apply(); err != nil {
			s.t.Fatal(err)
		}
	case s.m.notices:
		if err := s.f.follow(s.ctx, s.ix, s.f.heard()); err != nil {
			s.t.Fatal(err)
		}
	default:
		if err := s.ix.Sync(s.ctx, "t"); err != nil {
			s.t.Fatal(err)
		}
	}
}

// quiesce commits every open write, then syncs (with notices: on the notices alone).
func (s *modelSeed) quiesce() {
	f := s.f
	f.mu.Lock()
	f.stepsOn = false
	for len(f.open) > 0 {
		f.commit()
	}
	f.mu.Unlock()
	var err error
	if s.m.notices {
		err = f.follow(s.ctx, s.ix, f.heard())
	} else {
		err = s.ix.Sync(s.ctx, "t")
	}
	if err != nil {
		s.t.Fatal(err)
	}
}

// checkExact checks that the index holds exactly the store's cards.
func (s *modelSeed) checkExact() {
	got := map[string]string{}
	for a, h := range s.e.x.All() {
		got[a] = fmt.Sprintf("%s@%d", h.CardID, h.Revision)
	}
	want := map[string]string{}
	for a, c := range s.f.cards {
		want[a] = fmt.Sprintf("%s@%d", c.ID, c.Revision)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		var hist []string
		for _, e := range s.f.feed {
			hist = append(hist, fmt.Sprintf("%d:%s:%s@%d", e.Seq, e.AgentID, e.Op, e.Revision))
		}
		s.t.Fatalf("seed %d: index %v, store %v\nfeed %v", s.seed, got, want, hist)
	}
}

// TestFollowWhileListening: while notices are heard, Follow's rounds read only the entries after
// the highest applied (the whole window only every listeningFullPeriod), and the round after a
// failed read reads the whole window; when notices are not heard, every round reads the window.
func TestFollowWhileListening(t *testing.T) {
	for _, listening := range []bool{true, false} {
		f := &feedModel{r: rand.New(rand.NewPCG(1, 1)), cards: map[string]cards.Card{}, agents: []string{"a", "b", "c"}, stepsOn: true}
		for range 20 {
			f.begin()
			f.commit()
		}
		f.stepsOn = false
		ix := NewIndex(f, f)
		ix.Window = time.Hour // every window read starts at the beginning
		ix.Listening = func() bool { return listening }
		ctx, cancel := context.WithCancel(context.Background())
		if _, err := ix.entry(ctx, "t"); err != nil {
			t.Fatal(err)
		}
		f.mu.Lock()
		f.afters = nil
		f.mu.Unlock()
		calls := func() []int64 {
			f.mu.Lock()
			defer f.mu.Unlock()
			return slices.Clone(f.afters)
		}
		waitCalls := func(n int) []int64 {
			for {
				if got := calls(); len(got) >= n {
					return got
				}
				time.Sleep(time.Millisecond)
			}
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			ix.Follow(ctx, time.Millisecond, nil, nil)
		}()
		const rounds = 30 // far fewer than listeningFullPeriod holds at 1 ms a round
		full := 0
		for _, after := range waitCalls(rounds)[:rounds] {
			if after == 0 {
				full++
			}
		}
		if want := map[bool]int{true: 0, false: rounds}[listening]; full != want {
			t.Errorf("listening=%v: %d of %d rounds read the whole window, want %d", listening, full, rounds, want)
		}
		if listening {
			// A failed read: the next round reads the whole window.
			f.mu.Lock()
			f.failNext = true
			failedAt := len(f.afters)
			f.mu.Unlock()
			got := waitCalls(failedAt + 2)
			if got[failedAt+1] != 0 {
				t.Errorf("the round after a failed read started after %d, want the whole window (0); reads %v", got[failedAt+1], got[failedAt:])
			}
		}
		cancel()
		<-done
	}
}

// TestWroteConcurrently: writes of this replica applied by many writers at once (one leads and
// applies every write waiting in one install; see wroteQueue) are each in the index when their
// Wrote returns, the highest revision of a card that several write wins whatever order their
// applies come in, and a card of an agent created anew while another write of it waits in the
// same batch is read back from the store. First the index's lock is held while the writers
// queue, so that writes are applied together; then they run free.
func TestWroteConcurrently(t *testing.T) {
	w := newWroteFixture(t)
	w.queuedBehindTheLock()
	w.runningFree()
	w.recreatedInABatch()
	w.twoRevisionsInABatch()
}

// wroteWriters is how many writers TestWroteConcurrently runs at once.
const wroteWriters = 16

// wroteFixture is TestWroteConcurrently's index over a store model, and the writers' shared
// card: every writer writes its own agent's card and the agent "common"'s.
type wroteFixture struct {
	t       *testing.T
	ctx     context.Context
	store   *feedModel
	ix      *Index
	e       *indexEntry
	started time.Time // when every write began: after the build
	wg      sync.WaitGroup
	// common guards commonRev, the revision of the store's card of the agent every writer writes.
	common    sync.Mutex
	commonRev int64
}

// newWroteFixture builds tenant t's index over an empty store model.
func newWroteFixture(t *testing.T) *wroteFixture {
	ctx := context.Background()
	store := &feedModel{cards: map[string]cards.Card{}}
	ix := NewIndex(store, store)
	e, err := ix.entry(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	return &wroteFixture{t: t, ctx: ctx, store: store, ix: ix, e: e, started: time.Now().Add(time.Second)}
}

// holds is the card id and revision the index holds of the agent, or "" and 0.
func (w *wroteFixture) holds(id string) (string, int64) {
	w.e.x.RLock()
	defer w.e.x.RUnlock()
	if h, ok := w.e.x.Held(id); ok {
		return h.CardID, h.Revision
	}
	return "", 0
}

// write is writer n's write i: revision i+1 of its own card and the next revision of common's,
// stored, then applied with Wrote; both must be in the index when Wrote returns.
func (w *wroteFixture) write(n, i int) {
	t := w.t
	own := cardstest.Stored(cards.Card{AgentID: fmt.Sprintf("w%02d", n), Name: "Own", ID: fmt.Sprintf("id-w%02d", n), Revision: int64(i + 1)})
	w.common.Lock()
	w.commonRev++
	shared := cardstest.Stored(cards.Card{AgentID: "common", Name: "Common", ID: "id-common", Revision: w.commonRev})
	w.store.mu.Lock()
	w.store.cards[own.AgentID], w.store.cards["common"] = own, shared
	w.store.mu.Unlock()
	w.common.Unlock()
	if err := w.ix.Wrote(w.ctx, "t", w.started, own, shared); err != nil {
		t.Error(err)
		return
	}
	if id, rev := w.holds(own.AgentID); id != own.ID || rev < own.Revision {
		t.Errorf("Wrote of %s@%d returned with %s@%d in the index", own.AgentID, own.Revision, id, rev)
	}
	if _, rev := w.holds("common"); rev < shared.Revision {
		t.Errorf("Wrote of common@%d returned with revision %d in the index", shared.Revision, rev)
	}
}

// waitFor polls until ok holds of the queue, or fails the test after 10 s.
func (w *wroteFixture) waitFor(what string, ok func(q *wroteQueue) bool) {
	t := w.t
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		w.e.wrote.mu.Lock()
		done := ok(&w.e.wrote)
		w.e.wrote.mu.Unlock()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("10 s without %s", what)
		}
	}
}

// queuedBehindTheLock checks that the first writes of every writer, queued while the index's lock
// is held, are applied together by the first leader.
func (w *wroteFixture) queuedBehindTheLock() {
	t, e := w.t, w.e
	e.syncMu.Lock()
	for n := range wroteWriters {
		w.wg.Go(func() { w.write(n, 0) })
	}
	// All queued: the first leader waits for the lock with the writes it took, k of them, and
	// the others wait for it; it then takes those 16-k together, as its next batch.
	w.waitFor("all writes queued", func(q *wroteQueue) bool { return q.entered == wroteWriters })
	e.syncMu.Unlock()
	w.wg.Wait()
	if e.wrote.most < wroteWriters/2 {
		t.Fatalf("the writes queued behind the lock were applied %d at most together, want %d or more", e.wrote.most, wroteWriters/2)
	}
	// The first leader applied the writes that queued behind it too, not handing the lead on.
	if e.wrote.led != 1 {
		t.Fatalf("%d writes led, want 1: the first leader applies what queued behind it", e.wrote.led)
	}
}

// runningFree checks that, with the writers running free, the index ends with each writer's last
// revision of its card and the last revision of common's.
func (w *wroteFixture) runningFree() {
	t := w.t
	for n := range wroteWriters {
		w.wg.Go(func() {
			for i := 1; i < 50; i++ {
				w.write(n, i)
			}
		})
	}
	w.wg.Wait()
	for n := range wroteWriters {
		if id, rev := w.holds(fmt.Sprintf("w%02d", n)); id != fmt.Sprintf("id-w%02d", n) || rev != 50 {
			t.Errorf("w%02d: the index holds %s@%d, want revision 50", n, id, rev)
		}
	}
	if _, rev := w.holds("common"); rev != w.commonRev {
		t.Errorf("common: the index holds revision %d, want the last written, %d", rev, w.commonRev)
	}
}

// behindLeader has writer n's next write lead and wait for the lock with its batch while each of
// cs, one write each, queues behind it in order; then the leader applies them together, as its
// next batch.
func (w *wroteFixture) behindLeader(n int, cs ...cards.Card) {
	t, e := w.t, w.e
	t.Helper()
	e.syncMu.Lock()
	e.wrote.most, e.wrote.led = 0, 0
	w.wg.Go(func() { w.write(n, 50) })
	w.waitFor("a leader", func(q *wroteQueue) bool { return q.leading && len(q.queue) == 0 })
	for i, c := range cs {
		w.wg.Go(func() {
			if err := w.ix.Wrote(w.ctx, "t", w.started, c); err != nil {
				t.Error(err)
			}
		})
		w.waitFor("the writes queued", func(q *wroteQueue) bool { return len(q.queue) == i+1 })
	}
	e.syncMu.Unlock()
	w.wg.Wait()
	if e.wrote.most != len(cs) || e.wrote.led != 1 {
		t.Fatalf("the %d writes queued behind the leader were applied %d at most together, %d writes leading; want them together, by the leader", len(cs), e.wrote.most, e.wrote.led)
	}
}

// recreatedInABatch checks a batch with the agent's card created anew behind a write of its old
// one: the new card is read back from the store (which has a later revision of it by then), not
// installed over the old one by its revision.
func (w *wroteFixture) recreatedInABatch() {
	t := w.t
	old := cardstest.Stored(cards.Card{AgentID: "re", Name: "Old", ID: "id-old", Revision: 7})
	anew := cardstest.Stored(cards.Card{AgentID: "re", Name: "New", ID: "id-new", Revision: 8})
	later := cardstest.Stored(cards.Card{AgentID: "re", Name: "Later", ID: "id-new", Revision: 9})
	w.store.mu.Lock()
	w.store.cards["re"] = later
	w.store.mu.Unlock()
	w.behindLeader(0, old, anew)
	if id, rev := w.holds("re"); id != "id-new" || rev != 9 {
		t.Fatalf("re: the index holds %s@%d, want the store's card, id-new@9", id, rev)
	}
}

// twoRevisionsInABatch checks a batch with two revisions of one card: the later is installed
// with its own analysis and outage copy, which its writer made before it queued, not with the
// earlier's.
func (w *wroteFixture) twoRevisionsInABatch() {
	t, e := w.t, w.e
	e.cache.copyLimit = 1 << 20
	first := cardstest.Stored(cards.Card{AgentID: "two", Name: "Alpha", ID: "id-two", Revision: 1})
	second := cardstest.Stored(cards.Card{AgentID: "two", Name: "Bravo", ID: "id-two", Revision: 2})
	first.UpdatedAt, second.UpdatedAt = time.Unix(1000, 0), time.Unix(2000, 0) // a version the copy can tell
	w.behindLeader(1, first, second)
	if id, rev := w.holds("two"); id != "id-two" || rev != 2 {
		t.Fatalf("two: the index holds %s@%d, want id-two@2", id, rev)
	}
	// posted tells whether the word's list holds the agent's current document.
	posted := func(word, agent string) bool {
		e.x.RLock()
		defer e.x.RUnlock()
		return strings.Contains(e.x.Contents()[agent], "w:"+word+":")
	}
	if !posted("bravo", "two") || posted("alpha", "two") {
		t.Fatalf("two@2 is listed under bravo: %v, under alpha: %v; want its own name's token only", posted("bravo", "two"), posted("alpha", "two"))
	}
	if c, ok := w.ix.Remembered("t", "two"); !ok || c.Name != "Bravo" || c.Revision != 2 {
		t.Fatalf("the outage copy answers two as %q@%d (%v), want Bravo@2", c.Name, c.Revision, ok)
	}
}
