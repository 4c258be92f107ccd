package tenants

import (
	"context"
	"slices"
	"time"

	"github.com/agentcards/agentcards/authz/fault"
)

// The gate's view of the database, kept in one place for every request and every door: it
// answers until a ping of the gate's fails, and then does not answer until a ping of the gate's
// answers. Only those pings change it, one at a time (see ping), asked for by whatever has
// reason to doubt the database: a request whose tenant row or card read failed or waited too
// long, the readiness probe, the check of a request that failed, a background loop whose read
// failed; and, while it is found down, by the gate itself every memo. A request that went
// through or failed on its own says nothing either way, so an outage starts once and ends once.
// While it is found down, requests the gate admits on a remembered tenant row do not ask the
// database: reads that memory holds are answered from it (marked stale) even while the row is
// still fresh, and the others are refused at once with ErrDown.

// ErrDown refuses a request that needs the database while it is found down: it fails at once,
// where it would wait for a database that may hang.
var ErrDown = fault.New(fault.Unavailable, "the database is unavailable; try again later")

// Down reports whether the database was found down and has not answered a ping of the gate's
// since.
func (s *Service) Down() bool { return s.Ping != nil && s.downAt.Load() != 0 }

// OnDown registers f, called once when a ping finds the database down after it answered, with
// the ping's error (the web server's outage log says so).
func (s *Service) OnDown(f func(err error)) {
	s.hooks.Lock()
	defer s.hooks.Unlock()
	s.onDown = append(s.onDown, f)
}

// OnAnswer registers f, called once when the database answers a ping of the gate's after it was
// found down (the web server's outage log says so).
func (s *Service) OnAnswer(f func()) {
	s.hooks.Lock()
	defer s.hooks.Unlock()
	s.onAnswer = append(s.onAnswer, f)
}

// Check takes the answer of a ping made outside the gate (the readiness probe's, or the check
// of a request that failed) and returns it, or the gate's verdict where that is worse, so that
// the probe never answers while the gate refuses writes: a failed ping makes the gate ping the
// database itself (unless ctx ended, which says nothing of it), as a pool's ping can fail while
// the server answers; a ping that answered while the database is found down makes the gate ping
// it at once (or wait for its ping under way), whose answer ends the outage or not. Without a
// gate (SQLite) it returns pinged.
func (s *Service) Check(ctx context.Context, pinged error) error {
	if s.Ping == nil {
		return pinged
	}
	if pinged != nil {
		if ctx.Err() == nil {
			s.confirmDown(ctx)
		}
		return pinged
	}
	if s.downAt.Load() == 0 {
		return nil
	}
	if ok, err := s.ping(ctx, true); ok {
		return err
	}
	return ErrDown // ctx ended first
}

// Suspect is told of a background read of the database that failed (the loops that follow other
// replicas' writes and liveness): the gate pings the database, at most once a memo while it is
// found down, so that an outage is found even while every request is answered from memory.
func (s *Service) Suspect(ctx context.Context) {
	if s.Ping == nil || ctx.Err() != nil {
		return
	}
	if s.downAt.Load() != 0 {
		s.stillDown(ctx)
		return
	}
	s.ping(ctx, false)
}

// confirmDown reports whether the database is found down: already, or by a ping now (or the
// ping under way, whose answer it waits for).
func (s *Service) confirmDown(ctx context.Context) bool {
	if s.downAt.Load() != 0 {
		return true
	}
	ok, err := s.ping(ctx, true)
	return ok && err != nil
}

// stillDown reports whether the database was found down and has not been found up since:
// within the memo of the last failed ping, or while a ping is under way, without asking; after
// that, this request pings it (the ping's own short deadline, whatever this request's) and
// says what it found.
func (s *Service) stillDown(ctx context.Context) bool {
	if s.Ping == nil || s.downAt.Load() == 0 {
		return false
	}
	if s.memoized() {
		return true
	}
	ok, err := s.ping(ctx, false)
	return !ok || err != nil
}

// pingCall is a ping of the gate's under way, which other callers may wait for.
type pingCall struct {
	done chan struct{}
	err  error
}

// ping pings the database for the gate, on the ping's own deadline whatever ctx's, and notes
// what it found: down, or answering (which ends an outage). One runs at a time: a caller that
// finds one under way waits for its answer (wait) or goes on without one (ok false); ok is
// false too when ctx ends while it waits.
func (s *Service) ping(ctx context.Context, wait bool) (ok bool, err error) {
	s.pingMu.Lock()
	if p := s.pinging; p != nil {
		s.pingMu.Unlock()
		if !wait {
			return false, nil
		}
		select {
		case <-p.done:
			return true, p.err
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
	p := &pingCall{done: make(chan struct{})}
	s.pinging = p
	s.pingMu.Unlock()
	defer func() {
		s.pingMu.Lock()
		s.pinging = nil
		s.pingMu.Unlock()
		close(p.done)
	}()
	if p.err = s.Ping(context.WithoutCancel(ctx)); p.err != nil {
		s.foundDown(p.err)
	} else {
		s.answered()
	}
	return true, p.err
}

// memoized reports whether a ping found the database down within the memo.
func (s *Service) memoized() bool {
	return time.Duration(sinceEpoch()-s.probed.Load()) < s.memo()
}

// memo is how long a ping that found the database down stands (DownMemo, by default downMemo).
func (s *Service) memo() time.Duration {
	if s.DownMemo > 0 {
		return s.DownMemo
	}
	return downMemo
}

// foundDown notes that a ping found the database down just now, and says so if it answered
// before; the gate then pings it every memo until it answers (watch). Only ping calls it.
func (s *Service) foundDown(err error) {
	at := sinceEpoch()
	s.probed.Store(at)
	if !s.downAt.CompareAndSwap(0, at) {
		return
	}
	s.pingMu.Lock()
	if !s.watching && !s.closed {
		s.watching = true
		go s.watch()
	}
	s.pingMu.Unlock()
	s.hooks.Lock()
	fs := slices.Clone(s.onDown)
	s.hooks.Unlock()
	for _, f := range fs {
		f(err)
	}
}

// answered notes that a ping of the gate's found the database answering, and says so if it was
// found down. Only ping calls it.
func (s *Service) answered() {
	if s.downAt.Load() == 0 {
		return
	}
	if s.Reconnect != nil {
		s.Reconnect()
	}
	if s.downAt.Swap(0) == 0 {
		return
	}
	s.hooks.Lock()
	fs := slices.Clone(s.onAnswer)
	s.hooks.Unlock()
	for _, f := range fs {
		f()
	}
}

// watch pings the database every memo while it is found down, so that an outage ends when it
// answers even when no request asks (none comes, or server.tenantCacheTtl is 0 and requests do
// not pass the gate's memory).
func (s *Service) watch() {
	t := time.NewTicker(s.memo())
	defer t.Stop()
	for {
		select {
		case <-s.stopped():
			return
		case <-t.C:
		}
		if s.stillDown(context.Background()) {
			continue
		}
		s.pingMu.Lock()
		if s.downAt.Load() == 0 {
			s.watching = false
			s.pingMu.Unlock()
			return
		}
		s.pingMu.Unlock() // found down again meanwhile: this watch goes on
	}
}

// Close stops the gate's background pings; call it before the database closes.
func (s *Service) Close() {
	s.pingMu.Lock()
	defer s.pingMu.Unlock()
	if !s.closed {
		s.closed = true
		close(s.stopped())
	}
}

// stopped is closed by Close.
func (s *Service) stopped() chan struct{} {
	s.stopOnce.Do(func() { s.stop = make(chan struct{}) })
	return s.stop
}

// epoch is the origin of the gate's clock: times are kept as durations since it, on the
// monotonic clock, so that a step of the wall clock neither prolongs nor cuts an outage.
var epoch = time.Now()

// sinceEpoch is now on the gate's clock, in ns; never 0.
func sinceEpoch() int64 { return int64(time.Since(epoch)) + 1 }
