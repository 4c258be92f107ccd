package search

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/tenants/paging"
)

// StreamLimits bound the live streams of the change feed one replica serves (search.streams):
// each open stream holds a goroutine, a connection and its queue, so neither a tenant nor all of
// them together may open more than the replica was sized for.
type StreamLimits struct {
	// PerTenant and PerReplica bound the streams open at once, of one tenant and in all; past
	// either, a new stream is refused with fault.RateLimited.
	PerTenant  int
	PerReplica int
	// Buffer is how many changes may wait for one stream's reader. A reader that lets more pile
	// up is dropped (EndSlow) and resumes from its last event: a slow reader costs the replica
	// at most this, never an unbounded buffer.
	Buffer int
}

// DefaultStreamLimits are the bounds of a replica configured with none.
var DefaultStreamLimits = StreamLimits{PerTenant: 1000, PerReplica: 4000, Buffer: 1024}

// WithDefaults returns l with each bound not above 0 set to its default.
func (l StreamLimits) WithDefaults() StreamLimits {
	if l.PerTenant <= 0 {
		l.PerTenant = DefaultStreamLimits.PerTenant
	}
	if l.PerReplica <= 0 {
		l.PerReplica = DefaultStreamLimits.PerReplica
	}
	if l.Buffer <= 0 {
		l.Buffer = DefaultStreamLimits.Buffer
	}
	return l
}

// StreamEnd says why the server ended a stream; the client resumes from its last event's id.
type StreamEnd string

// Why streams end.
const (
	// EndSlow: the reader let more than StreamLimits.Buffer changes wait.
	EndSlow StreamEnd = "slow"
	// EndDraining: the replica is stopping; another one takes the stream up.
	EndDraining StreamEnd = "draining"
	// EndTokenExpired: the caller's token expired; the client resumes with a new one.
	EndTokenExpired StreamEnd = "token_expired"
)

// Ended is what Subscription.Next returns once the server ended the stream: why, and the
// cursor to resume from (the last event's).
type Ended struct {
	Reason StreamEnd
	Cursor string
}

func (e *Ended) Error() string { return "change stream ended: " + string(e.Reason) }

// streamPassEvery is how often a tenant's shared read begins a pass over the feed again from its
// horizon (see feedPos) where entries may commit out of the order of their numbers (Postgres,
// MySQL). Between passes it reads only entries after the last one read, one query per wake-up
// however long the window: a change that commits after a later-numbered one reaches the
// streams at the next pass, within this.
const streamPassEvery = time.Second

// streamReadTimeout bounds one shared read of a tenant's feed.
const streamReadTimeout = 10 * time.Second

// streamPage is how many entries one query of a shared read takes.
const streamPage = 1000

// recheckEvery is how often a stream asks the tenant gate and the policy again whether its
// caller may still read, and what: a revoked right or a suspended tenant ends or narrows the
// stream within it.
const recheckEvery = time.Second

// Streams serves live streams of the tenants' change feeds. The streams of one tenant share one
// read of its feed per wake-up, whatever their number: a write of this replica (Wake), another
// replica's notice (Postgres LISTEN) or the poll (Run) wakes the tenant's reader, which reads
// the new entries once, reads their cards once, and queues the changes to every stream; each
// stream then keeps those its caller may read. The reads are Changes' (the same passes and
// horizons as a page of cards.changes), so an event's cursor is one cards.changes takes.
type Streams struct {
	Changes *Changes
	Limits  StreamLimits
	// OnError, if set, hears of a shared read that failed; the next wake-up reads again.
	OnError func(tenants.ID, error)

	// dropped counts the streams ended for a slow reader.
	dropped atomic.Uint64

	mu       sync.Mutex
	feeds    map[tenants.ID]*tenantFeed
	open     int
	draining bool
}

// tenantFeed is the shared reader of one tenant's feed for its streams.
type tenantFeed struct {
	s      *Streams
	tenant tenants.ID
	// count is the streams open or opening (under s.mu).
	count int
	wake  chan struct{}
	// newPass asks the next read to begin a pass (set by Run).
	newPass  atomic.Bool
	lastPass time.Time // under s.mu
	stop     chan struct{}
	// primed is closed once the reader has its first position (primeErr if it failed).
	primed   chan struct{}
	primeErr error

	mu   sync.Mutex
	subs map[*Subscription]struct{}

	// Owned by the reader's goroutine: where its pass is, and the entries above the pass's start
	// it has queued already (a new pass reads them again).
	pos       feedPos
	delivered map[int64]struct{}
}

// StreamEvent is one change as the streams of a tenant share it, with the cursor after it.
type StreamEvent struct {
	FeedChange
	// Cursor resumes the feed after this change: the event's id.
	Cursor string

	once    sync.Once
	encoded []byte
	signed  string
}

// Encoded returns the change as encode encodes it, and sign's signature of those bytes, both made
// once for every stream it goes to.
func (e *StreamEvent) Encoded(encode func(FeedChange) []byte, sign func([]byte) string) ([]byte, string) {
	e.once.Do(func() {
		e.encoded = encode(e.FeedChange)
		e.signed = sign(e.encoded)
	})
	return e.encoded, e.signed
}

// Subscribe opens a stream of the tenant's change feed for the caller in ctx: the changes after
// since (a cursor of cards.changes or of an earlier stream), or, without since, those after the
// present, which Cursor then gives. It refuses what ListChanges refuses, a replica that is
// draining (fault.Unavailable), and a stream past the limits (fault.RateLimited). Close it.
func (s *Streams) Subscribe(ctx context.Context, tenant tenants.ID, since string, page paging.Page) (*Subscription, error) {
	admitted, err := s.Changes.admit(ctx, tenant)
	if err != nil {
		return nil, err
	}
	limit, err := page.Check(DefaultChanges, MaxChanges)
	if err != nil {
		return nil, err
	}
	now := s.Changes.now()
	var pos feedPos
	if since != "" {
		if pos, err = s.Changes.decode(tenant, since, now); err != nil {
			return nil, err
		}
	}
	readable, err := s.Changes.Authz.ReadFilter(admitted, string(tenant))
	if err != nil {
		return nil, err
	}
	f, err := s.reserve(tenant)
	if err != nil {
		return nil, err
	}
	select {
	case <-f.primed:
	case <-ctx.Done():
		s.release(f)
		return nil, ctx.Err()
	}
	if f.primeErr != nil {
		s.release(f)
		return nil, f.primeErr
	}
	sub := &Subscription{feed: f, parent: ctx, ctx: admitted, readable: readable, checked: time.Now(), limit: limit,
		pos: pos, catching: since != "", cursor: since, signal: make(chan struct{}, 1)}
	// From here on every change the reader finds is queued to sub; a catch-up that begins a pass
	// after this point finds every change committed before it.
	f.mu.Lock()
	f.subs[sub] = struct{}{}
	f.mu.Unlock()
	// A drain that began meanwhile may have gone by f's streams before sub was among them.
	s.mu.Lock()
	draining := s.draining
	s.mu.Unlock()
	if draining {
		sub.end(EndDraining)
	}
	if since == "" {
		h, err := s.Changes.horizon(admitted, tenant, now, 0)
		if err != nil {
			sub.Close()
			return nil, err
		}
		sub.cursor = paging.EncodeCursor(feedList(tenant), feedPos{After: h, Since: now.Unix(), Horizon: -1})
	} else {
		sub.seen = map[int64]struct{}{}
	}
	return sub, nil
}

// reserve counts a stream of the tenant against the limits and returns the tenant's reader,
// started if none was.
func (s *Streams) reserve(tenant tenants.ID) (*tenantFeed, error) {
	l := s.Limits.WithDefaults()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.draining {
		return nil, fault.New(fault.Unavailable, "this replica is stopping; open the stream again: service unavailable")
	}
	f := s.feeds[tenant]
	switch {
	case s.open >= l.PerReplica:
		return nil, fault.Errorf(fault.RateLimited, "this replica serves %d change streams already; try again later", l.PerReplica)
	case f != nil && f.count >= l.PerTenant:
		return nil, fault.Errorf(fault.RateLimited, "tenant %q has %d change streams open already; try again later", string(tenant), l.PerTenant)
	}
	if f == nil {
		f = &tenantFeed{s: s, tenant: tenant, wake: make(chan struct{}, 1), stop: make(chan struct{}), primed: make(chan struct{}),
			subs: map[*Subscription]struct{}{}, delivered: map[int64]struct{}{}, lastPass: time.Now()}
		if s.feeds == nil {
			s.feeds = map[tenants.ID]*tenantFeed{}
		}
		s.feeds[tenant] = f
		go f.run()
	}
	f.count++
	s.open++
	return f, nil
}

// release gives back a stream's place; the last stream of a tenant stops its reader.
func (s *Streams) release(f *tenantFeed) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f.count--
	s.open--
	if f.count == 0 {
		if s.feeds[f.tenant] == f {
			delete(s.feeds, f.tenant)
		}
		close(f.stop)
	}
}

// Open returns how many streams are open on this replica.
func (s *Streams) Open() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.open
}

// Dropped returns how many streams were ended because their reader let too many changes wait.
func (s *Streams) Dropped() uint64 { return s.dropped.Load() }

// Wake tells the tenant's streams that its feed has new entries: a write of this replica just
// committed, or another replica's notice came. The reader reads once for every wake-up that
// came while it was reading.
func (s *Streams) Wake(tenant tenants.ID) {
	s.mu.Lock()
	f := s.feeds[tenant]
	s.mu.Unlock()
	if f != nil {
		f.poke()
	}
}

// WakeAll wakes every tenant's streams (a LISTEN just (re)established: notices sent while none
// was in effect reached nobody).
func (s *Streams) WakeAll() {
	for _, f := range s.all() {
		f.poke()
	}
}

func (s *Streams) all() []*tenantFeed {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*tenantFeed, 0, len(s.feeds))
	for _, f := range s.feeds {
		out = append(out, f)
	}
	return out
}

// Run wakes every tenant's streams every interval, until ctx ends: the writes of replicas whose
// notices do not come (SQLite and MySQL have none; a lost one on Postgres) reach the streams
// within it, and where entries may commit out of order a new pass begins every
// streamPassEvery.
func (s *Streams) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		s.mu.Lock()
		feeds := make([]*tenantFeed, 0, len(s.feeds))
		for _, f := range s.feeds {
			if now.Sub(f.lastPass) >= streamPassEvery {
				f.lastPass = now
				f.newPass.Store(true)
			}
			feeds = append(feeds, f)
		}
		s.mu.Unlock()
		for _, f := range feeds {
			f.poke()
		}
	}
}

// Drain ends every stream with EndDraining and refuses new ones: the server is stopping, and
// its clients resume on another replica.
func (s *Streams) Drain() {
	s.mu.Lock()
	s.draining = true
	s.mu.Unlock()
	for _, f := range s.all() {
		f.mu.Lock()
		for sub := range f.subs {
			sub.end(EndDraining)
			delete(f.subs, sub)
		}
		f.mu.Unlock()
	}
}

func (f *tenantFeed) poke() {
	select {
	case f.wake <- struct{}{}:
	default: // a read is due already
	}
}

// run is the tenant's reader: it takes its first position, then reads at each wake-up until
// its last stream closes.
func (f *tenantFeed) run() {
	f.primeErr = f.prime()
	close(f.primed)
	if f.primeErr != nil {
		return
	}
	for {
		select {
		case <-f.stop:
			return
		case <-f.wake:
		}
		if err := f.read(); err != nil && f.s.OnError != nil {
			f.s.OnError(f.tenant, err)
		}
	}
}

// prime takes the reader's first position: the feed's present, with the entries of the current
// pass marked as queued (the streams that open from now on see whatever committed before them
// through their own catch-up, or start after it).
func (f *tenantFeed) prime() error {
	ctx, cancel := context.WithTimeout(context.Background(), streamReadTimeout)
	defer cancel()
	c := f.s.Changes
	h, err := c.horizon(ctx, f.tenant, c.now(), 0)
	if err != nil {
		return err
	}
	f.pos = feedPos{After: h, Since: c.now().Unix(), Horizon: -1}
	_, err = f.scanAll(ctx, func([]Change, scanned) error { return nil })
	return err
}

// read reads the entries that are new since the last read, once for all the tenant's streams,
// and queues their changes to every stream.
func (f *tenantFeed) read() error {
	ctx, cancel := context.WithTimeout(context.Background(), streamReadTimeout)
	defer cancel()
	c := f.s.Changes
	if f.newPass.Swap(false) && f.pos.Horizon >= 0 {
		f.pos = feedPos{After: f.pos.Horizon, Since: f.pos.At, Horizon: -1}
		for seq := range f.delivered {
			if seq <= f.pos.After {
				delete(f.delivered, seq)
			}
		}
	}
	list := feedList(f.tenant)
	_, err := f.scanAll(ctx, func(fresh []Change, r scanned) error {
		changes, err := c.render(ctx, f.tenant, fresh, nil)
		if err != nil {
			return err
		}
		if len(changes) == 0 {
			return nil
		}
		events := make([]*StreamEvent, len(changes))
		for i, ch := range changes {
			at := r.pos
			at.After = ch.Seq
			events[i] = &StreamEvent{FeedChange: ch, Cursor: paging.EncodeCursor(list, at)}
		}
		f.deliver(events)
		return nil
	})
	return err
}

// scanAll reads the entries after the reader's position until it has caught up, hands each
// read's entries not queued before to apply, and then marks them queued. Where entries commit
// in the order of their numbers each read that catches up begins the next pass; elsewhere the
// pass goes on (from the last entry read) until Run asks for a new one.
func (f *tenantFeed) scanAll(ctx context.Context, apply func([]Change, scanned) error) (int, error) {
	c := f.s.Changes
	n := 0
	for {
		r, err := c.scan(ctx, f.tenant, f.pos, c.now(), streamPage)
		if err != nil {
			return n, err
		}
		var fresh []Change
		for _, e := range r.entries {
			if _, ok := f.delivered[e.Seq]; !ok {
				fresh = append(fresh, e)
			}
		}
		if len(fresh) > 0 {
			if err := apply(fresh, r); err != nil {
				return n, err
			}
			if c.Window > 0 {
				// Only a new pass reads entries again; where entries commit in order (SQLite)
				// every read starts after the last entry read, and nothing needs remembering.
				for _, e := range fresh {
					f.delivered[e.Seq] = struct{}{}
				}
			}
			n += len(fresh)
		}
		switch {
		case r.full || c.Window <= 0:
			f.pos = r.next
		default:
			f.pos = r.pos
			if len(r.entries) > 0 {
				f.pos.After = r.entries[len(r.entries)-1].Seq
			}
		}
		if !r.full {
			return n, nil
		}
	}
}

// deliver queues events to every stream of the tenant, dropping those that let too many wait.
func (f *tenantFeed) deliver(events []*StreamEvent) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for sub := range f.subs {
		if !sub.push(events) {
			delete(f.subs, sub)
		}
	}
}

// Subscription is one open stream. Next returns its events; Close ends it.
type Subscription struct {
	feed *tenantFeed
	// parent is the caller's context; ctx is it admitted into the tenant, with readable its read
	// filter as of checked.
	parent   context.Context
	ctx      context.Context
	readable func(agentID string) bool
	checked  time.Time
	limit    int

	// The catch-up from the cursor the stream opened with: pos is where it reads next, began
	// says it began a pass, seen are the entries it found (a change queued by the reader
	// meanwhile is not sent twice).
	catching bool
	began    bool
	pos      feedPos
	seen     map[int64]struct{}
	// cursor is the id of the last event Next returned (or the cursor it opened with).
	cursor string

	mu     sync.Mutex
	queue  []*StreamEvent
	ended  StreamEnd
	signal chan struct{}
	closed bool
}

// Cursor returns the cursor to resume from after the events Next returned so far.
func (sub *Subscription) Cursor() string { return sub.cursor }

// push queues events; false when the stream ended, or ends now because the queue is full.
func (sub *Subscription) push(events []*StreamEvent) bool {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	if sub.ended != "" {
		return false
	}
	if len(sub.queue)+len(events) > sub.feed.s.Limits.WithDefaults().Buffer {
		sub.endLocked(EndSlow)
		sub.feed.s.dropped.Add(1)
		return false
	}
	sub.queue = append(sub.queue, events...)
	sub.wakeLocked()
	return true
}

func (sub *Subscription) end(why StreamEnd) {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	sub.endLocked(why)
}

func (sub *Subscription) endLocked(why StreamEnd) {
	if sub.ended == "" {
		sub.ended = why
		sub.queue = nil
		sub.wakeLocked()
	}
}

func (sub *Subscription) wakeLocked() {
	select {
	case sub.signal <- struct{}{}:
	default:
	}
}

// Next returns the stream's next events, in the feed's order, of the cards its caller may
// read: first those after the cursor it opened with, then the changes as they commit. It waits
// up to within for some, and returns none (and no error) if none came. Once the server ended the
// stream it returns an *Ended; a caller no longer admitted or allowed to read gets the refusal.
func (sub *Subscription) Next(ctx context.Context, within time.Duration) ([]*StreamEvent, error) {
	var timeout <-chan time.Time
	for {
		if err := sub.recheck(); err != nil {
			return nil, err
		}
		sub.mu.Lock()
		ended := sub.ended
		var batch []*StreamEvent
		if !sub.catching {
			// While the catch-up reads, what the reader queues waits, in the queue's bound.
			batch, sub.queue = sub.queue, nil
		}
		sub.mu.Unlock()
		if ended != "" {
			return nil, &Ended{Reason: ended, Cursor: sub.cursor}
		}
		if sub.catching {
			out, err := sub.catchUp(ctx)
			if err != nil || len(out) > 0 {
				return out, err
			}
			continue
		}
		if out := sub.keep(batch); len(out) > 0 {
			return out, nil
		}
		if timeout == nil {
			t := time.NewTimer(within)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-sub.signal:
		case <-timeout:
			return nil, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// keep returns the events of batch the caller may read and has not had from the catch-up.
func (sub *Subscription) keep(batch []*StreamEvent) []*StreamEvent {
	var out []*StreamEvent
	for _, e := range batch {
		if _, dup := sub.seen[e.Seq]; dup || (sub.readable != nil && !sub.readable(e.AgentID)) {
			continue
		}
		out = append(out, e)
	}
	if len(batch) > 0 {
		// The catch-up's entries were queued, if at all, by the reads that overlapped it.
		sub.seen = nil
	}
	if len(out) > 0 {
		sub.cursor = out[len(out)-1].Cursor
	}
	return out
}

// catchUp reads one page of the feed from the stream's cursor, with its caller's read filter.
// It is over once a pass that began after the stream registered with the reader has caught up:
// every change committed before that registration lies before that pass's end, and every later
// one is queued by the reader.
func (sub *Subscription) catchUp(ctx context.Context) ([]*StreamEvent, error) {
	c, tenant := sub.feed.s.Changes, sub.feed.tenant
	r, err := c.scan(sub.ctx, tenant, sub.pos, c.now(), sub.limit)
	if err != nil {
		return nil, err
	}
	sub.began = sub.began || r.began
	var fresh []Change
	for _, e := range r.entries {
		if _, ok := sub.seen[e.Seq]; !ok {
			sub.seen[e.Seq] = struct{}{}
			fresh = append(fresh, e)
		}
	}
	changes, err := c.render(sub.ctx, tenant, fresh, sub.readable)
	if err != nil {
		return nil, err
	}
	if !r.full && sub.began {
		sub.catching = false
	}
	sub.pos = r.next
	list := feedList(tenant)
	out := make([]*StreamEvent, len(changes))
	for i, ch := range changes {
		at := r.pos
		at.After = ch.Seq
		out[i] = &StreamEvent{FeedChange: ch, Cursor: paging.EncodeCursor(list, at)}
	}
	if len(out) > 0 {
		sub.cursor = out[len(out)-1].Cursor
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// recheck admits the caller again and takes its read filter anew, every recheckEvery.
func (sub *Subscription) recheck() error {
	if time.Since(sub.checked) < recheckEvery {
		return nil
	}
	c, tenant := sub.feed.s.Changes, sub.feed.tenant
	ctx, err := c.admit(sub.parent, tenant)
	if err != nil {
		return err
	}
	readable, err := c.Authz.ReadFilter(ctx, string(tenant))
	if err != nil {
		return err
	}
	sub.ctx, sub.readable, sub.checked = ctx, readable, time.Now()
	return nil
}

// Close ends the stream and gives back its place.
func (sub *Subscription) Close() {
	sub.mu.Lock()
	if sub.closed {
		sub.mu.Unlock()
		return
	}
	sub.closed = true
	sub.mu.Unlock()
	f := sub.feed
	f.mu.Lock()
	delete(f.subs, sub)
	f.mu.Unlock()
	f.s.release(f)
}

// IsEnded reports whether err is the server's end of a stream, and returns it.
func IsEnded(err error) (*Ended, bool) {
	var e *Ended
	ok := errors.As(err, &e)
	return e, ok
}
