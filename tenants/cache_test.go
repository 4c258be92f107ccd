package tenants_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/web/webtest"
)

// stalling is the real tenant store, except that one Get can be held until the test lets it
// return, to put a read in flight across a write.
type stalling struct {
	tenants.Store
	hold    chan struct{} // non-nil: the next Get waits for it after reading
	reading chan struct{} // closed when that Get has read its row
}

func (s *stalling) Get(ctx context.Context, id tenants.ID) (tenants.Tenant, error) {
	t, err := s.Store.Get(ctx, id)
	if hold := s.hold; hold != nil {
		s.hold = nil
		close(s.reading)
		<-hold
	}
	return t, err
}

// TestTenantRowCache: the request gates use a remembered tenant row; writes through the Service
// forget it at once, a write elsewhere (another replica, here the store itself) is seen once the
// row is older than CacheTTL, and a read that was in flight across a write is not remembered.
func TestTenantRowCache(t *testing.T) {
	for _, d := range storagetest.Dialects() {
		t.Run(d, func(t *testing.T) {
			db := storagetest.Open(t, d)
			store := &stalling{Store: storage.NewTenantStore(db)}
			svc := &tenants.Service{Store: store, CacheTTL: time.Hour}
			ctx := authz.WithPrincipal(context.Background(), authz.Principal{Subject: "root", PlatformAdmin: true})
			if _, err := svc.Create(ctx, tenants.Input{ID: "acme", Name: "Acme", Admins: []string{}}); err != nil {
				t.Fatal(err)
			}
			active := func() error { _, err := svc.Active(ctx, "acme"); return err }
			if err := active(); err != nil {
				t.Fatal(err)
			}

			// Another replica suspends the tenant: this one goes on with its row (the hour is
			// not over) until something makes it forget.
			other := storage.NewTenantStore(db)
			row, err := other.Get(ctx, "acme")
			if err != nil {
				t.Fatal(err)
			}
			row.Status = tenants.StatusSuspended
			if err := other.Update(ctx, row); err != nil {
				t.Fatal(err)
			}
			if err := active(); err != nil {
				t.Fatalf("the remembered row was not used: %v", err)
			}
			svc.Forget("acme")
			if err := active(); !errors.Is(err, tenants.ErrSuspended) {
				t.Fatalf("after Forget: %v", err)
			}

			// Through the Service, a write applies at once.
			active2 := tenants.StatusActive
			if _, err := svc.Update(ctx, "acme", tenants.Patch{Status: &active2}); err != nil {
				t.Fatal(err)
			}
			if err := active(); err != nil {
				t.Fatalf("reactivated through the Service: %v", err)
			}

			// A read in flight across a write must not be remembered: it holds the old row.
			svc.Forget("acme")
			hold, reading := make(chan struct{}), make(chan struct{})
			store.hold, store.reading = hold, reading
			done := make(chan error, 1)
			go func() { done <- active() }()
			<-reading // it has read the active row
			suspended := tenants.StatusSuspended
			if _, err := svc.Update(ctx, "acme", tenants.Patch{Status: &suspended}); err != nil {
				t.Fatal(err)
			}
			close(hold)
			if err := <-done; err != nil {
				t.Fatalf("the read in flight: %v", err)
			}
			if err := active(); !errors.Is(err, tenants.ErrSuspended) {
				t.Fatalf("a read from before the suspension was remembered: %v", err)
			}

			// With a short TTL, a write elsewhere is seen without any Forget.
			short := &tenants.Service{Store: storage.NewTenantStore(db), CacheTTL: 20 * time.Millisecond}
			if _, err := short.Published(ctx, "acme"); !errors.Is(err, tenants.ErrNotFound) {
				t.Fatalf("suspended tenant published: %v", err)
			}
			row, err = other.Get(ctx, "acme")
			if err != nil {
				t.Fatal(err)
			}
			row.Status = tenants.StatusActive
			if err := other.Update(ctx, row); err != nil {
				t.Fatal(err)
			}
			// short read the row before the write, so once the TTL has passed since the write
			// its copy is too old, and the first read after must see the write; the sleep is
			// the promise under test, so this holds however loaded the machine is.
			time.Sleep(short.CacheTTL + 10*time.Millisecond)
			if _, err := short.Published(ctx, "acme"); err != nil {
				t.Fatalf("a write elsewhere not seen on the first read after the %s TTL: %v", short.CacheTTL, err)
			}
		})
	}
}

// TestStaleRowOnlyForReads: while the database does not answer, a read may pass the gate on the
// tenant row as last read (and is marked stale); a write never does.
func TestStaleRowOnlyForReads(t *testing.T) {
	db, outage := storagetest.OpenWithOutage(t, "postgres")
	svc := &tenants.Service{Store: storage.NewTenantStore(db), CacheTTL: 50 * time.Millisecond,
		Ping: db.Ping}
	t.Cleanup(svc.Close)
	ctx := rememberedAcme(t, svc)
	outage.Down()
	time.Sleep(60 * time.Millisecond)
	read, stale := tenants.WithStaleMark(ctx)
	if got, err := svc.Active(read, "acme"); err != nil || got.ID != "acme" || !stale() {
		t.Errorf("a read during the outage: %+v, %v, stale %v; want the row as last read, marked stale", got, err, stale())
	}
	if _, err := svc.Active(ctx, "acme"); err == nil {
		t.Error("a write passed the gate on the row as last read")
	}
	outage.Up()
	fresh := false
	for range 50 { // until the pool has reconnected
		time.Sleep(60 * time.Millisecond)
		read, stale = tenants.WithStaleMark(ctx)
		if _, err := svc.Active(read, "acme"); err == nil && !stale() {
			fresh = true
			break
		}
	}
	if !fresh {
		t.Error("no fresh read once the database is back")
	}
}

// counting is the real tenant store, counting the rows asked of it.
type counting struct {
	tenants.Store
	gets atomic.Int64
}

func (s *counting) Get(ctx context.Context, id tenants.ID) (tenants.Tenant, error) {
	s.gets.Add(1)
	return s.Store.Get(ctx, id)
}

// TestHungDatabaseFoundDownOnce: a database that hangs (its connections open, nothing answered)
// holds the first read only until the gate's short wait and a ping have found it down, not for
// the caller's deadline; then reads pass on the row as last read without asking it, and writes
// are refused at once with ErrDown. After the memo the gate pings it again while requests go on
// without waiting; once it answers, reads are fresh again.
func TestHungDatabaseFoundDownOnce(t *testing.T) {
	db, outage := storagetest.OpenWithOutage(t, "postgres")
	store := &counting{Store: storage.NewTenantStore(db)}
	var pings atomic.Int64
	// A ping that found it down stands 2 s, and a ping waits 2 s for its answer: the steps
	// below each take well under that.
	svc := &tenants.Service{Store: store, CacheTTL: 50 * time.Millisecond, DownMemo: 2 * time.Second,
		Ping: func(ctx context.Context) error {
			pings.Add(1)
			ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			return db.Alive(ctx)
		}}
	t.Cleanup(svc.Close)
	ctx := rememberedAcme(t, svc)
	outage.Hang()
	defer outage.Up()
	time.Sleep(60 * time.Millisecond)
	// The caller would wait a minute: the gate waits its own few seconds.
	long, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	read, stale := tenants.WithStaleMark(long)
	if got, err := svc.Active(read, "acme"); err != nil || got.ID != "acme" || !stale() {
		t.Fatalf("a read while the database hangs: %+v, %v, stale %v; want the row as last read, marked stale", got, err, stale())
	}
	if long.Err() != nil {
		t.Fatal("the read waited for the caller's deadline")
	}
	// Found down: the next read and write do not ask it, within the memo.
	gets, pinged := store.gets.Load(), pings.Load()
	read, stale = tenants.WithStaleMark(long)
	if _, err := svc.Active(read, "acme"); err != nil || !stale() {
		t.Errorf("the next read: %v, stale %v", err, stale())
	}
	if _, err := svc.Active(long, "acme"); !errors.Is(err, tenants.ErrDown) {
		t.Errorf("a write while the database is found down: %v, want ErrDown", err)
	}
	if store.gets.Load() != gets || pings.Load() != pinged {
		t.Errorf("the database was asked again within the memo of being found down: %d reads, %d pings",
			store.gets.Load()-gets, pings.Load()-pinged)
	}
	// After the memo the gate pings it again by itself, with no request to ask (its watch), and
	// concurrent requests meanwhile go on at once: at most one of them pings it.
	webtest.Eventually(t, 10*time.Second, "the gate pings the database again after the memo", func() bool {
		return pings.Load() > pinged
	})
	pinged = pings.Load()
	var wg sync.WaitGroup
	var staleReads atomic.Int64
	for range 8 {
		wg.Go(func() {
			read, stale := tenants.WithStaleMark(long)
			if _, err := svc.Active(read, "acme"); err == nil && stale() {
				staleReads.Add(1)
			}
		})
	}
	wg.Wait()
	if n := pings.Load() - pinged; n > 1 || staleReads.Load() != 8 {
		t.Errorf("8 concurrent reads after the memo: %d pings, %d answered from memory; want at most 1 and 8", n, staleReads.Load())
	}
	outage.Up()
	webtest.Eventually(t, 15*time.Second, "a fresh read once the database answers", func() bool {
		read, stale := tenants.WithStaleMark(ctx)
		_, err := svc.Active(read, "acme")
		return err == nil && !stale()
	})
	if _, err := svc.Active(ctx, "acme"); err != nil {
		t.Errorf("a write once the database answers: %v", err)
	}
}

// rememberedAcme creates tenant acme through svc and reads it once, so that svc remembers its
// row; it returns the platform admin's context that did.
func rememberedAcme(t *testing.T, svc *tenants.Service) context.Context {
	t.Helper()
	ctx := authz.WithPrincipal(context.Background(), authz.Principal{Subject: "root", PlatformAdmin: true})
	if _, err := svc.Create(ctx, tenants.Input{ID: "acme", Name: "Acme", Admins: []string{}}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Active(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	return ctx
}

// gated is the real tenant store, counting its reads; while a gate is set (hold), each read
// says on read that it has read its row and then waits for the gate to close before it answers.
type gated struct {
	tenants.Store
	gets atomic.Int32
	read chan struct{}
	mu   sync.Mutex
	gate chan struct{}
}

func (g *gated) Get(ctx context.Context, id tenants.ID) (tenants.Tenant, error) {
	g.gets.Add(1)
	t, err := g.Store.Get(ctx, id)
	g.mu.Lock()
	gate := g.gate
	g.mu.Unlock()
	if gate != nil {
		g.read <- struct{}{}
		<-gate
	}
	return t, err
}

// hold makes the reads from now on wait for the gate it returns; unhold lets later reads
// through (those waiting still wait for their gate).
func (g *gated) hold() chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.gate = make(chan struct{})
	return g.gate
}

func (g *gated) unhold() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.gate = nil
}

// TestTenantReadsShared: requests that find a tenant's row expired share one read of it; a row
// past half its TTL is read again ahead while requests go on with it; a read is shared only by
// requests that come less than the TTL after it started, and never across a write here.
func TestTenantReadsShared(t *testing.T) {
	db := storagetest.Open(t, "sqlite")
	store := &gated{Store: storage.NewTenantStore(db), read: make(chan struct{}, 64)}
	s := &sharedReads{t: t, store: store, svc: &tenants.Service{Store: store, CacheTTL: time.Second}}
	base := time.Now()
	tenants.SetCacheClock(s.svc, func() time.Time { return base.Add(time.Duration(s.offset.Load())) })
	s.ctx = authz.WithPrincipal(context.Background(), authz.Principal{Subject: "root", PlatformAdmin: true})
	if _, err := s.svc.Create(s.ctx, tenants.Input{ID: "acme", Name: "Acme", Admins: []string{}}); err != nil {
		t.Fatal(err)
	}
	if err := s.active(); err != nil {
		t.Fatal(err)
	}
	s.reads(1)

	s.expiredReadShared()
	s.readAhead()
	s.oldReadNotWaitedFor()
	s.writeNotShared()
}

// sharedReads is the service of TestTenantReadsShared, with a TTL of one second, on a store
// whose reads the test holds and counts, and a clock it sets; its methods are the test's steps
// and the checks they share.
type sharedReads struct {
	t      *testing.T
	store  *gated
	svc    *tenants.Service
	ctx    context.Context // the platform admin's
	offset atomic.Int64    // the clock, as a time.Duration past the test's start
}

// at sets the clock to d past the test's start.
func (s *sharedReads) at(d time.Duration) { s.offset.Store(int64(d)) }

// active asks the service whether acme is active, as a request gate does.
func (s *sharedReads) active() error { _, err := s.svc.Active(s.ctx, "acme"); return err }

// soon runs active and fails the test unless it answers without waiting for a held read.
func (s *sharedReads) soon(what string) error {
	s.t.Helper()
	done := make(chan error, 1)
	go func() { done <- s.active() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		s.t.Fatalf("%s: still waiting after 10s, for a read it should not wait for", what)
		return nil
	}
}

// started waits for a held read to have read its row.
func (s *sharedReads) started(what string) {
	s.t.Helper()
	select {
	case <-s.store.read:
	case <-time.After(10 * time.Second):
		s.t.Fatalf("%s: no read of the tenant row within 10s", what)
	}
}

// reads fails the test unless the store has been read want times.
func (s *sharedReads) reads(want int32) {
	s.t.Helper()
	if got := s.store.gets.Load(); got != want {
		s.t.Fatalf("%d reads of the tenant row so far, want %d", got, want)
	}
}

// expiredReadShared: the row expired, concurrent requests share one read.
func (s *sharedReads) expiredReadShared() {
	s.at(2 * time.Second)
	gate := s.store.hold()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() { errs <- s.active() })
	}
	s.started("the row expired")
	time.Sleep(50 * time.Millisecond) // let the others come to the read (else they find its row)
	s.store.unhold()
	close(gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			s.t.Fatal(err)
		}
	}
	s.reads(2)
}

// readAhead: past half its TTL the row is read again ahead; the request goes on with the row,
// and so does the next while that read runs, without starting another. Once the row expired,
// a request waits for that read (it started less than the TTL ago).
func (s *sharedReads) readAhead() {
	t := s.t
	s.at(2600 * time.Millisecond)
	gate := s.store.hold()
	if err := s.soon("past half the TTL"); err != nil {
		t.Fatal(err)
	}
	s.started("past half the TTL") // the read ahead has read the row and is held
	s.at(2700 * time.Millisecond)
	if err := s.soon("while the read ahead runs"); err != nil {
		t.Fatal(err)
	}
	s.reads(3)
	// Should the request come only after the read answered, the row it finds is not past half
	// its TTL yet (it expires at 3.6 s) and is used as it is.
	s.at(3050 * time.Millisecond)
	done := make(chan error, 1)
	go func() { done <- s.active() }()
	s.store.unhold()
	close(gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	s.reads(3)
}

// oldReadNotWaitedFor: a read that started the TTL ago or more is not waited for; a request
// starts its own.
func (s *sharedReads) oldReadNotWaitedFor() {
	s.at(5 * time.Second)
	gate := s.store.hold()
	done := make(chan error, 1)
	go func() { done <- s.active() }()
	s.started("the row expired again")
	s.at(6100 * time.Millisecond)
	later := make(chan error, 1)
	go func() { later <- s.active() }()
	s.started("a TTL after the read started") // a second read
	s.store.unhold()
	close(gate)
	if err, err2 := <-done, <-later; err != nil || err2 != nil {
		s.t.Fatal(err, err2)
	}
	s.reads(5)
}

// writeNotShared: after a write through the Service, a request does not wait for a read from
// before it (the read holds the active row), and that read is not remembered.
func (s *sharedReads) writeNotShared() {
	t := s.t
	s.at(10 * time.Second)
	gate := s.store.hold()
	done := make(chan error, 1)
	go func() { done <- s.active() }()
	s.started("before the write")
	s.store.unhold()
	suspended := tenants.StatusSuspended
	if _, err := s.svc.Update(s.ctx, "acme", tenants.Patch{Status: &suspended}); err != nil {
		t.Fatal(err)
	}
	if err := s.soon("after a write"); !errors.Is(err, tenants.ErrSuspended) {
		t.Fatalf("after a suspension through the Service: %v", err)
	}
	close(gate)
	if err := <-done; err != nil {
		t.Fatalf("the request from before the write: %v", err)
	}
	if err := s.active(); !errors.Is(err, tenants.ErrSuspended) {
		t.Fatalf("a read from before the suspension was remembered: %v", err)
	}
}
