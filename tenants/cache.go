package tenants

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/agentcards/agentcards/authz/fault"
)

// rowCache remembers tenant rows for the request gates (Active, Published), which read the
// tenant on every request. Writes through the Service on this replica forget the row at once;
// another replica's suspension or policy change is seen once the row is older than ttl.
// Missing tenants are not remembered, so ids that do not exist cannot fill it.
//
// One read of a tenant's row is under way at a time, shared by the requests that need it
// (reads), and a row past half its ttl is read again ahead, in the background, by the first
// request that finds it so while that request and the next go on with the row they hold. Under
// load a row therefore never expires: requests do not wait for it. Were every request that
// finds the row expired to read it on its own, each expiry would send as many reads of the same
// row at the database at once as there are requests in flight, queued in the pool ahead of the
// card reads and writes of those requests.
type rowCache struct {
	mu   sync.Mutex
	rows map[ID]cachedRow
	// reads holds the read of each tenant's row under way (see pendingRead).
	reads map[ID]*pendingRead
	// gen moves on every forget. A read that started before a forget is not kept, or it could
	// put back the row the write just replaced.
	gen uint64
}

type cachedRow struct {
	t       Tenant
	expires time.Time
}

// staleLimit is the oldest a row as last read may be to stand in for the tenant's while the
// database does not answer.
const staleLimit = 5 * time.Minute

// staleWait is how long a request waits for the database's answer to its tenant row before a
// ping (on a connection of its own) decides whether it is down or only slow. Once a ping found
// it down, requests do not ask it: reads that memory can answer are answered from it (marked
// stale), the others (writes too) refused at once with ErrDown; downMemo after the last failed
// ping, one request pings it again (the others go on without asking), and the first that answers
// ends it. So while the database hangs, one request waits staleWait plus the ping's deadline, a
// request a second waits for a ping, and the others answer at once (those that passed the gate
// on a row still fresh before it was found down wait for the database, as any request would);
// once the database answers again, requests find it within about downMemo, or at once when
// another ping (the readiness probe's) finds it answering (see Check).
const (
	staleWait = 2 * time.Second
	downMemo  = time.Second
)

func (s *Service) lookup(ctx context.Context, id ID) (Tenant, error) {
	if s.CacheTTL <= 0 {
		return s.Store.Get(ctx, id)
	}
	s.admitted(ctx)
	c := &s.cache
	now := time.Now()
	if s.clock != nil {
		now = s.clock()
	}
	c.mu.Lock()
	last, known := c.rows[id]
	fresh := known && now.Before(last.expires)
	if fresh && !s.Down() {
		if last.expires.Sub(now) < s.CacheTTL/2 {
			s.readLocked(ctx, id, now) // ahead: this request goes on with the row it has
		}
		c.mu.Unlock()
		return last.t, nil
	}
	gen := c.gen
	c.mu.Unlock()
	// A read (never a write) of a tenant whose row memory holds, recent enough, may be answered
	// with that row while the database does not answer (it fails, and a ping fails too); after
	// staleWait without an answer a ping decides, so that a database that hangs (an unplugged
	// network) holds reads seconds, not the whole request timeout.
	standIn := known && mayBeStale(ctx) && s.Ping != nil && now.Sub(last.expires) < staleLimit
	// fromMemory marks the read stale and gives the row as last read, unless a write here
	// forgot it since.
	fromMemory := func() (Tenant, bool) {
		if !c.current(gen) {
			return Tenant{}, false
		}
		MarkStale(ctx)
		return last.t, true
	}
	if s.stillDown(ctx) {
		// Found down a moment ago: not asked again. Such a read is answered from memory, and
		// any other request refused at once.
		if standIn {
			if t, ok := fromMemory(); ok {
				return t, nil
			}
		}
		return Tenant{}, ErrDown
	}
	if fresh {
		// The database was found back since the check above: the row stands.
		return last.t, nil
	}
	c.mu.Lock()
	r := s.readLocked(ctx, id, now)
	c.mu.Unlock()
	if s.Ping != nil {
		if r.slow(ctx) {
			// No answer within staleWait: a ping on a connection of its own says whether the
			// database is down (then a read memory may answer gets the row as last read, and
			// any other request, a write too, is refused at once) or slow (then the read is
			// waited for, as any read is; it was never cut short).
			if s.confirmDown(ctx) && ctx.Err() == nil {
				if standIn {
					if t, ok := fromMemory(); ok {
						return t, nil
					}
				}
				return Tenant{}, ErrDown
			}
		}
	}
	t, err := r.wait(ctx)
	if err != nil && standIn && fault.KindOf(err) == "" && ctx.Err() == nil && !errors.Is(err, ErrNotFound) {
		if s.confirmDown(ctx) && ctx.Err() == nil {
			// The read failed and a ping fails too: the database does not answer.
			if t, ok := fromMemory(); ok {
				return t, nil
			}
		}
	}
	return t, err
}

// pendingRead is a read of a tenant row under way in a goroutine of its own, shared by the
// requests that need the row while it runs. Its row is remembered when it answers, unless a
// forget came in between, and may be used until started+ttl, as a remembered row: a request
// may therefore wait for a read that started before it came only if it started less than ttl
// before. It does not end with the request that started it (the others still wait for it), but
// at the latest sharedReadLimit after it started; each request waits at most until its own end.
type pendingRead struct {
	started time.Time
	done    chan struct{}
	t       Tenant
	err     error
}

// sharedReadLimit bounds a shared read of a tenant row, which no single request's end stops
// (the request timeout's default).
const sharedReadLimit = 30 * time.Second

// readLocked returns the read of id's row under way, started at most ttl before now, or starts
// one. c.mu is held.
func (s *Service) readLocked(ctx context.Context, id ID, now time.Time) *pendingRead {
	c := &s.cache
	if r := c.reads[id]; r != nil && now.Sub(r.started) < s.CacheTTL {
		return r
	}
	r := &pendingRead{started: now, done: make(chan struct{})}
	if c.reads == nil {
		c.reads = map[ID]*pendingRead{}
	}
	c.reads[id] = r
	gen := c.gen
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sharedReadLimit)
	go func() {
		defer cancel()
		t, err := s.Store.Get(rctx, id)
		c.mu.Lock()
		if c.reads[id] == r {
			delete(c.reads, id)
		}
		switch {
		case errors.Is(err, ErrNotFound):
			delete(c.rows, id)
			c.gen++ // a read in flight must not put it back
		case err == nil && c.gen == gen:
			// The row was read after started: it may be used until started+ttl.
			if c.rows == nil {
				c.rows = map[ID]cachedRow{}
			}
			if expires := r.started.Add(s.CacheTTL); expires.After(c.rows[id].expires) {
				c.rows[id] = cachedRow{t: t, expires: expires}
			}
		}
		c.mu.Unlock()
		r.t, r.err = t, err
		close(r.done)
	}()
	return r
}

// wait returns the read's answer, or ctx's error if ctx ends first.
func (r *pendingRead) wait(ctx context.Context) (Tenant, error) {
	select {
	case <-r.done:
		return r.t, r.err
	case <-ctx.Done():
		return Tenant{}, ctx.Err()
	}
}

// slow reports whether the read has not answered within staleWait (nor ctx ended).
func (r *pendingRead) slow(ctx context.Context) bool {
	timer := time.NewTimer(staleWait)
	defer timer.Stop()
	select {
	case <-r.done:
		return false
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

// current reports whether no row was forgotten since gen was taken: a row read then still
// stands.
func (c *rowCache) current(gen uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen == gen
}

// Forget drops the remembered row of a tenant whose row or rules were just written.
func (s *Service) Forget(id ID) {
	c := &s.cache
	c.mu.Lock()
	delete(c.rows, id)
	delete(c.reads, id) // a later request must not wait for a read from before the write
	c.gen++
	c.mu.Unlock()
}
