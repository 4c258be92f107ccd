// Package liveness keeps whether each card's agent is answering: heartbeats that agents send,
// and what health probes found. Every replica holds the state of the tenants it serves in memory,
// writes what it learns to the database in batches (a heartbeat moves no revision and writes no
// change-feed entry) and reads back what other replicas wrote every poll interval.
package liveness

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/tenants"
)

// Record is the stored liveness of one agent's card. Zero times are "never".
type Record struct {
	Tenant  tenants.ID
	AgentID string
	// CardID is the card the record was written for: a record of a deleted card of the same
	// agentId says nothing about the card that replaced it.
	CardID string
	// SeenAt is the last heartbeat; ProbedAt the last successful probe; DownAt when a run of
	// failed probes marked the card offline; CheckedAt the last probe, whatever its outcome.
	SeenAt, ProbedAt, DownAt, CheckedAt time.Time
	ProbeFailures                       int
	ProbeLatencyMs                      int64
	ProbeError                          string
	// UpdatedAt is when the record was last written (by the writer's clock).
	UpdatedAt time.Time
}

// Store keeps the records.
type Store interface {
	// SaveBeats writes the heartbeats (SeenAt) of the records, all at once, keeping what probes
	// recorded for the same card (and dropping it for another card).
	SaveBeats(ctx context.Context, beats []Record) error
	// Load reads every record of the tenant.
	Load(ctx context.Context, tenant tenants.ID) ([]Record, error)
	// Since reads the records of every tenant written at or after t.
	Since(ctx context.Context, t time.Time) ([]Record, error)
}

// DefaultTTL is how long a heartbeat or a successful probe keeps a card online.
const DefaultTTL = 60 * time.Second

// linger is how long a heartbeat waits for others to share its write: with 1,000 agents beating
// every 10 s, about five beats go in each write.
const linger = 50 * time.Millisecond

// pollMargin is how far before its last poll each poll reads again: a record written just
// before that poll, by a replica whose clock is behind or whose commit was slow, is still read.
const pollMargin = 3 * time.Second

// Tracker holds the liveness of the tenants this replica serves.
type Tracker struct {
	store Store
	ttl   time.Duration
	now   func() time.Time

	mu      sync.Mutex
	tenants map[tenants.ID]*tenantLive
	queue   map[beatKey]Record // heartbeats waiting for the next write
	batch   *flush             // the write the queued heartbeats will go in
	writing bool               // a goroutine is writing batches

	seq     atomic.Uint64 // the last version handed out
	started time.Time
	roundMu sync.Mutex
	since   time.Time // where the next round reads from
}

type beatKey struct {
	tenant  tenants.ID
	agentID string
}

// flush is one write of queued heartbeats; done is closed once err is set.
type flush struct {
	done chan struct{}
	err  error
}

type tenantLive struct {
	ready chan struct{}
	err   error

	mu      sync.RWMutex
	byAgent map[string]*entry
	// version moves whenever an update changes whether some card is online, or which card an
	// agent's liveness is of (not when a TTL runs out: see Online). Versions come from the
	// tracker's one counter, so a tenant forgotten and loaded again never repeats one.
	version atomic.Uint64
	seq     *atomic.Uint64
}

func (tl *tenantLive) moved() { tl.version.Store(tl.seq.Add(1)) }

type entry struct {
	cardID                      string
	seen, probed, down, checked time.Time
	failures                    int
	latencyMs                   int64
	probeErr                    string
	updated                     time.Time
}

// New returns a tracker over store. ttl is liveness.ttl; now may be nil (time.Now).
func New(store Store, ttl time.Duration, now func() time.Time) *Tracker {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	if now == nil {
		now = time.Now
	}
	t := &Tracker{store: store, ttl: ttl, now: now, tenants: map[tenants.ID]*tenantLive{}, queue: map[beatKey]Record{}}
	t.started = t.clock()
	return t
}

// TTL is how long a heartbeat keeps a card online.
func (t *Tracker) TTL() time.Duration { return t.ttl }

func (t *Tracker) clock() time.Time { return t.now().UTC().Truncate(time.Microsecond) }

// Now is the tracker's clock.
func (t *Tracker) Now() time.Time { return t.clock() }

// contact is the last sign of life: a heartbeat or a successful probe.
func (e *entry) contact() time.Time {
	if e.probed.After(e.seen) {
		return e.probed
	}
	return e.seen
}

// online reports whether the entry makes its card online at now, and until when.
func (e *entry) online(now time.Time, ttl time.Duration) (bool, time.Time) {
	c := e.contact()
	if c.IsZero() || c.Before(e.down) {
		return false, time.Time{}
	}
	until := c.Add(ttl)
	return now.Before(until), until
}

func (e *entry) state(now time.Time, ttl time.Duration) cards.Liveness {
	var l cards.Liveness
	switch on, _ := e.online(now, ttl); {
	case on:
		l.State = cards.Online
	case e.contact().IsZero() && e.down.IsZero():
		l.State = cards.Unknown
	default:
		l.State = cards.Offline
	}
	if !e.seen.IsZero() {
		seen := e.seen
		l.LastSeenAt = &seen
	}
	if !e.checked.IsZero() {
		l.Probe = &cards.Probe{CheckedAt: e.checked, OK: e.failures == 0, LatencyMs: e.latencyMs, Error: e.probeErr, Failures: e.failures}
	}
	return l
}

// tenant returns the tenant's state, loading it from the store on first use.
func (t *Tracker) tenant(ctx context.Context, tenant tenants.ID) (*tenantLive, error) {
	t.mu.Lock()
	tl, ok := t.tenants[tenant]
	if !ok {
		tl = &tenantLive{ready: make(chan struct{}), byAgent: map[string]*entry{}, seq: &t.seq}
		tl.moved()
		t.tenants[tenant] = tl
	}
	t.mu.Unlock()
	if ok {
		select {
		case <-tl.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if tl.err != nil {
			return nil, tl.err
		}
		return tl, nil
	}
	recs, err := t.store.Load(context.WithoutCancel(ctx), tenant)
	if err != nil {
		tl.err = err
		t.mu.Lock()
		if t.tenants[tenant] == tl {
			delete(t.tenants, tenant)
		}
		t.mu.Unlock()
		close(tl.ready)
		return nil, err
	}
	tl.mu.Lock()
	for _, r := range recs {
		tl.apply(r, t.clock(), t.ttl)
	}
	tl.mu.Unlock()
	close(tl.ready)
	return tl, nil
}

// loaded returns the tenant's state if it is loaded.
func (t *Tracker) loaded(tenant tenants.ID) *tenantLive {
	t.mu.Lock()
	tl := t.tenants[tenant]
	t.mu.Unlock()
	if tl == nil {
		return nil
	}
	select {
	case <-tl.ready:
		if tl.err != nil {
			return nil
		}
		return tl
	default:
		return nil // its load reads what was written so far anyway
	}
}

// apply merges a stored record into the tenant's state. The caller holds mu.
func (tl *tenantLive) apply(r Record, now time.Time, ttl time.Duration) {
	e := tl.byAgent[r.AgentID]
	was := false
	if e != nil {
		was, _ = e.online(now, ttl)
	}
	switch {
	case e == nil || e.cardID != r.CardID && r.UpdatedAt.After(e.updated):
		if e != nil {
			tl.moved() // the liveness is now another card's
		}
		e = &entry{cardID: r.CardID}
		tl.byAgent[r.AgentID] = e
		fallthrough
	case e.cardID == r.CardID:
		e.seen = later(e.seen, r.SeenAt)
		e.probed = later(e.probed, r.ProbedAt)
		e.down = later(e.down, r.DownAt)
		if !r.CheckedAt.Before(e.checked) {
			e.checked, e.failures, e.latencyMs, e.probeErr = r.CheckedAt, r.ProbeFailures, r.ProbeLatencyMs, r.ProbeError
		}
		e.updated = later(e.updated, r.UpdatedAt)
	default:
		return // an older record of another card
	}
	if is, _ := e.online(now, ttl); is != was {
		tl.moved()
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// Of returns the liveness of the agent's card cardID.
func (t *Tracker) Of(ctx context.Context, tenant tenants.ID, agentID, cardID string) (cards.Liveness, error) {
	tl, err := t.tenant(ctx, tenant)
	if err != nil {
		return cards.Liveness{}, err
	}
	tl.mu.RLock()
	defer tl.mu.RUnlock()
	return tl.of(agentID, cardID, t.clock(), t.ttl), nil
}

func (tl *tenantLive) of(agentID, cardID string, now time.Time, ttl time.Duration) cards.Liveness {
	e := tl.byAgent[agentID]
	if e == nil || e.cardID != cardID {
		return cards.Liveness{State: cards.Unknown}
	}
	return e.state(now, ttl)
}

// Lookup is a tenant's liveness as of one moment, for answering many cards.
type Lookup struct {
	tl  *tenantLive
	now time.Time
	ttl time.Duration
}

// Of returns the liveness of the agent's card cardID.
func (l Lookup) Of(agentID, cardID string) cards.Liveness {
	l.tl.mu.RLock()
	defer l.tl.mu.RUnlock()
	return l.tl.of(agentID, cardID, l.now, l.ttl)
}

// Lookup returns the tenant's liveness as of now.
func (t *Tracker) Lookup(ctx context.Context, tenant tenants.ID) (Lookup, error) {
	tl, err := t.tenant(ctx, tenant)
	if err != nil {
		return Lookup{}, err
	}
	return Lookup{tl: tl, now: t.clock(), ttl: t.ttl}, nil
}

// Version returns the version of the tenant's liveness: it moves whenever an update changes
// whether some card is online, so an answer derived at one version holds until the version
// moves or the moment Online gave passes.
func (t *Tracker) Version(ctx context.Context, tenant tenants.ID) (uint64, error) {
	tl, err := t.tenant(ctx, tenant)
	if err != nil {
		return 0, err
	}
	return tl.version.Load(), nil
}

// Online calls each with a test of whether an agent's card is online now, and returns the
// version that answer is of and until when it holds (the earliest moment a card it found online
// would go offline by its TTL).
func (t *Tracker) Online(ctx context.Context, tenant tenants.ID, each func(online func(agentID, cardID string) bool)) (version uint64, until time.Time, err error) {
	tl, err := t.tenant(ctx, tenant)
	if err != nil {
		return 0, time.Time{}, err
	}
	now := t.clock()
	until = now.Add(t.ttl)
	tl.mu.RLock()
	defer tl.mu.RUnlock()
	version = tl.version.Load()
	each(func(agentID, cardID string) bool {
		e := tl.byAgent[agentID]
		if e == nil || e.cardID != cardID {
			return false
		}
		on, u := e.online(now, t.ttl)
		if on && u.Before(until) {
			until = u
		}
		return on
	})
	return version, until, nil
}

// Beat records a heartbeat of the agent's card cardID and returns its liveness once the
// heartbeat is stored: it shares one write with the heartbeats that come meanwhile.
func (t *Tracker) Beat(ctx context.Context, tenant tenants.ID, agentID, cardID string) (cards.Liveness, error) {
	tl, err := t.tenant(ctx, tenant)
	if err != nil {
		return cards.Liveness{}, err
	}
	now := t.clock()
	r := Record{Tenant: tenant, AgentID: agentID, CardID: cardID, SeenAt: now, UpdatedAt: now}
	t.mu.Lock()
	t.queue[beatKey{tenant, agentID}] = r
	if t.batch == nil {
		t.batch = &flush{done: make(chan struct{})}
	}
	f := t.batch
	if !t.writing {
		t.writing = true
		go t.writeBeats()
	}
	t.mu.Unlock()
	<-f.done // once queued, the write happens whatever ctx does
	if f.err != nil {
		return cards.Liveness{}, f.err
	}
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if e := tl.byAgent[agentID]; e != nil && e.cardID != cardID {
		// The stored row now belongs to this card; what was known of the other one is gone.
		delete(tl.byAgent, agentID)
		tl.moved()
	}
	tl.apply(r, t.clock(), t.ttl)
	return tl.of(agentID, cardID, t.clock(), t.ttl), nil
}

// writeBeats writes the queued heartbeats, a batch at a time, until none are queued.
func (t *Tracker) writeBeats() {
	for {
		time.Sleep(linger)
		t.mu.Lock()
		if len(t.queue) == 0 {
			t.writing = false
			t.mu.Unlock()
			return
		}
		beats := make([]Record, 0, len(t.queue))
		for _, r := range t.queue {
			beats = append(beats, r)
		}
		f := t.batch
		t.queue, t.batch = map[beatKey]Record{}, nil
		t.mu.Unlock()
		// Stamped as the write goes out, not as each beat came: other replicas read rows by
		// this time, and a batch that waited behind a slow write must not fall behind their
		// window.
		at := t.clock()
		for i := range beats {
			beats[i].UpdatedAt = at
		}
		ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
		f.err = t.store.SaveBeats(ctx, beats)
		cancel()
		close(f.done)
	}
}

// writeTimeout bounds one write of heartbeats.
const writeTimeout = 30 * time.Second

// Follow reads what other replicas wrote every interval, until ctx ends. failed, when set, is
// told the first failure of each run of failed rounds (a database outage is said once, not
// every interval).
func (t *Tracker) Follow(ctx context.Context, interval time.Duration, failed func(error)) {
	if interval <= 0 {
		interval = 500 * time.Millisecond
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		err := t.Round(ctx) // a failed round is read again by the next
		if err != nil && !failing && ctx.Err() == nil && failed != nil {
			failed(err)
		}
		failing = err != nil
	}
}

// Round is one round of Follow: it applies what was written since the last round that
// succeeded (and pollMargin before it).
func (t *Tracker) Round(ctx context.Context) error {
	t.roundMu.Lock()
	defer t.roundMu.Unlock()
	if t.since.IsZero() {
		t.since = t.started.Add(-pollMargin)
	}
	start := t.clock()
	if err := t.Poll(ctx, t.since); err != nil {
		return err
	}
	t.since = start.Add(-pollMargin)
	return nil
}

// Poll applies the records written at or after since to the loaded tenants.
func (t *Tracker) Poll(ctx context.Context, since time.Time) error {
	recs, err := t.store.Since(ctx, since)
	if err != nil {
		return err
	}
	now := t.clock()
	for _, r := range recs {
		tl := t.loaded(r.Tenant)
		if tl == nil {
			continue
		}
		tl.mu.Lock()
		tl.apply(r, now, t.ttl)
		tl.mu.Unlock()
	}
	return nil
}

// Removed forgets what is held of the agent's card (deleted on this replica; the store deletes
// its record with it). Other replicas keep theirs, which no card of that agent will match.
func (t *Tracker) Removed(tenant tenants.ID, agentID string) {
	tl := t.loaded(tenant)
	if tl == nil {
		return
	}
	tl.mu.Lock()
	if _, ok := tl.byAgent[agentID]; ok {
		delete(tl.byAgent, agentID)
		tl.moved()
	}
	tl.mu.Unlock()
}

// Forget drops what is held of a tenant (deleted, or to be read again on next use).
func (t *Tracker) Forget(tenant tenants.ID) {
	t.mu.Lock()
	delete(t.tenants, tenant)
	t.mu.Unlock()
}
