package storage_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/tenants"
)

// nextNotification waits for the tenant named by the next notification, failing the test after a
// generous deadline.
func nextNotification(t *testing.T, out <-chan tenants.ID, what string) tenants.ID {
	t.Helper()
	select {
	case tenant := <-out:
		return tenant
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no notification", what)
		return ""
	}
}

// TestListenReturnsOnceListening: a write that commits after Listen returned is heard, even when
// the LISTEN statement runs late. The test holds every LISTEN back by 300 ms: a Listen that
// returned before its LISTEN was in effect would let the write's NOTIFY reach nobody.
func TestListenReturnsOnceListening(t *testing.T) {
	db := storagetest.Open(t, "postgres")
	storage.SetBeforeListen(db, func(uint32) { time.Sleep(300 * time.Millisecond) })
	newTenant(t, db, "acme", "alice")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := make(chan tenants.ID, 16)
	var resyncs atomic.Int32
	start := time.Now()
	if err := db.Listen(ctx, out, func() { resyncs.Add(1) }, func(err error) { t.Log(err) }); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < 300*time.Millisecond {
		t.Fatalf("Listen returned after %s, before its LISTEN ran", waited)
	}
	if n := resyncs.Load(); n != 1 {
		t.Fatalf("resync called %d times when LISTEN took effect, want 1", n)
	}
	mustCreate(t, storage.NewCardStore(db), "acme", newCard("agt1", 1))
	if got := nextNotification(t, out, "write after Listen returned"); got != "acme" {
		t.Fatalf("notified %q, want acme", got)
	}
}

// TestListenResyncsAfterReconnect: when the listening connection is cut, Listen connects again,
// and once the new LISTEN is in effect it calls resync, so that what was written while nobody
// listened (whose NOTIFY is lost) is still read; then notifications flow again.
func TestListenResyncsAfterReconnect(t *testing.T) {
	db := storagetest.Open(t, "postgres")
	newTenant(t, db, "acme", "alice")
	cards := storage.NewCardStore(db)
	pids := make(chan uint32, 4)
	release := make(chan struct{})
	var connections atomic.Int32
	storage.SetBeforeListen(db, func(pid uint32) {
		if connections.Add(1) == 2 {
			<-release // the reconnection waits until the test has written during the gap
		}
		pids <- pid
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := make(chan tenants.ID, 16)
	resynced := make(chan struct{}, 4)
	errs := make(chan error, 4)
	err := db.Listen(ctx, out, func() { resynced <- struct{}{} }, func(err error) { errs <- err })
	if err != nil {
		t.Fatal(err)
	}
	<-resynced // the first LISTEN
	first := <-pids
	if err := storage.ExecForTest(db, "SELECT pg_terminate_backend($1)", int64(first)); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errs:
		t.Logf("listener reported: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the cut connection was not noticed")
	}
	// Written while no LISTEN is in effect: its notification reaches nobody.
	mustCreate(t, cards, "acme", newCard("agt1", 1))
	select {
	case tenant := <-out:
		t.Fatalf("notified %q while no LISTEN was in effect", tenant)
	case <-resynced:
		t.Fatal("resync ran before the new LISTEN was in effect")
	default:
	}
	close(release)
	select {
	case <-resynced:
	case <-time.After(10 * time.Second):
		t.Fatal("no resync after LISTEN was established again")
	}
	if second := <-pids; second == first {
		t.Fatalf("the same backend %d listens again", second)
	}
	mustCreate(t, cards, "acme", newCard("agt2", 1))
	if got := nextNotification(t, out, "write after the reconnection"); got != "acme" {
		t.Fatalf("notified %q, want acme", got)
	}
}

// TestListenElsewhere: SQLite and MySQL have no LISTEN; Listen says so at once and starts nothing.
func TestListenElsewhere(t *testing.T) {
	for _, d := range []string{"sqlite", "mysql"} {
		t.Run(d, func(t *testing.T) {
			db := storagetest.Open(t, d)
			err := db.Listen(context.Background(), make(chan tenants.ID), func() { t.Error("resync called") }, nil)
			if !errors.Is(err, storage.ErrNoListen) {
				t.Fatalf("Listen on %s: %v, want ErrNoListen", d, err)
			}
		})
	}
}
