package liveness_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentcards/agentcards/cards/liveness"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/tenants"
)

// t0 is the tests' clock at the start: a fixed moment, so that every expected time is written
// by hand.
var t0 = time.Date(2026, time.May, 4, 10, 0, 0, 0, time.UTC)

// clock is a clock the test moves; it counts its reads since it was last set.
type clock struct {
	mu    sync.Mutex
	t     time.Time
	reads int
}

func newClock(t time.Time) *clock { return &clock{t: t} }

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads++
	return c.t
}

// set moves the clock to t and starts counting its reads afresh.
func (c *clock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t, c.reads = t, 0
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func (c *clock) readsSinceSet() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads
}

// openStore returns the real liveness store over a fresh database of dialect holding tenant
// acme.
func openStore(t *testing.T, dialect string) (*storage.DB, *storage.LivenessStore) {
	t.Helper()
	db := storagetest.Open(t, dialect)
	storagetest.CreateTenant(t, db, "acme", t0)
	return db, storage.NewLivenessStore(db)
}

// watchedStore is the real store with a window on what the tracker asks of it: it keeps each
// heartbeat write, can hold writes until the test releases them, and can fail a kind of call,
// to show what the tracker does then. Every call it does not fail goes to the database.
type watchedStore struct {
	liveness.Store

	mu                   sync.Mutex
	writes               [][]liveness.Record
	failSave, failLoad   error
	failSince            error
	loads                int
	sinceOK, sinceFailed int
	held                 chan []liveness.Record // told of each write held, when release is set
	release              chan struct{}          // a held write goes on when it receives
}

func (s *watchedStore) SaveBeats(ctx context.Context, beats []liveness.Record) error {
	s.mu.Lock()
	s.writes = append(s.writes, slices.Clone(beats))
	fail, held, release := s.failSave, s.held, s.release
	s.mu.Unlock()
	if release != nil {
		held <- slices.Clone(beats)
		<-release
	}
	if fail != nil {
		return fail
	}
	return s.Store.SaveBeats(ctx, beats)
}

func (s *watchedStore) Load(ctx context.Context, tenant tenants.ID) ([]liveness.Record, error) {
	s.mu.Lock()
	s.loads++
	fail := s.failLoad
	s.mu.Unlock()
	if fail != nil {
		return nil, fail
	}
	return s.Store.Load(ctx, tenant)
}

func (s *watchedStore) Since(ctx context.Context, since time.Time) ([]liveness.Record, error) {
	s.mu.Lock()
	fail := s.failSince
	if fail != nil {
		s.sinceFailed++
	} else {
		s.sinceOK++
	}
	s.mu.Unlock()
	if fail != nil {
		return nil, fail
	}
	return s.Store.Since(ctx, since)
}

// with runs f with the store locked, to set or read its fields.
func (s *watchedStore) with(f func(s *watchedStore)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s)
}
