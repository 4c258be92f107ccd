package storage_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/authz/authztest"
	"github.com/agentcards/agentcards/cards/search"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/tenants"
)

// nextNotification waits for the next notification, failing the test after a generous deadline.
func nextNotification(t *testing.T, out <-chan search.Notice, what string) search.Notice {
	t.Helper()
	select {
	case n := <-out:
		return n
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no notification", what)
		return search.Notice{}
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
	out := make(chan search.Notice, 16)
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
	// A write of one card carries its change-feed entry, the tenant's only one.
	seqs := changes(t, db)
	if got := nextNotification(t, out, "write after Listen returned"); got.Tenant != "acme" || len(seqs) != 1 ||
		got.Change != (search.Change{Seq: seqs[0].Seq, AgentID: "agt1", Op: "create", Revision: 1}) {
		t.Fatalf("notified %+v, want acme and the entry of %+v", got, seqs)
	}
	// So do a replacement and a delete, each in its own way of writing.
	store := storage.NewCardStore(db)
	if err := store.Replace(ctx, "acme", newCard("agt1", 2), 1); err != nil {
		t.Fatal(err)
	}
	if err := store.Delete(ctx, "acme", "agt1", 2); err != nil {
		t.Fatal(err)
	}
	seqs = changes(t, db)
	for i, op := range []string{"update", "delete"} {
		want := search.Change{Seq: seqs[i+1].Seq, AgentID: "agt1", Op: op, Revision: 2}
		if got := nextNotification(t, out, op); got.Tenant != "acme" || got.Change != want {
			t.Fatalf("notified %+v, want acme and %+v", got, want)
		}
	}
}

// TestListenResyncsAfterReconnect: when the listening connection is cut, Listen connects again,
// and once the new LISTEN is in effect it calls resync, so that what was written while nobody
// listened (whose NOTIFY is lost) is still read; then notifications flow again.
func TestListenResyncsAfterReconnect(t *testing.T) {
	db := storagetest.Open(t, "postgres")
	newTenant(t, db, "acme", "alice")
	cards := storage.NewCardStore(db)
	pids := make(chan uint32, 64)
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
	out := make(chan search.Notice, 16)
	resynced := make(chan struct{}, 64)
	errs := make(chan error, 64)
	err := db.Listen(ctx, out, func() { resynced <- struct{}{} }, func(err error) { errs <- err })
	if err != nil {
		t.Fatal(err)
	}
	<-resynced // the first LISTEN
	first := <-pids
	if err := execErr(db.SQL().Exec("SELECT pg_terminate_backend($1)", int64(first))); err != nil {
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
		t.Fatalf("notified %+v while no LISTEN was in effect", tenant)
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
	if got := nextNotification(t, out, "write after the reconnection"); got.Tenant != "acme" {
		t.Fatalf("notified %+v, want acme", got)
	}
}

// TestListenElsewhere: SQLite and MySQL have no LISTEN; Listen says so at once and starts nothing.
func TestListenElsewhere(t *testing.T) {
	for _, d := range []string{"sqlite", "mysql"} {
		t.Run(d, func(t *testing.T) {
			db := storagetest.Open(t, d)
			err := db.Listen(context.Background(), make(chan search.Notice), func() { t.Error("resync called") }, nil)
			if !errors.Is(err, storage.ErrNoListen) {
				t.Fatalf("Listen on %s: %v, want ErrNoListen", d, err)
			}
		})
	}
}

// TestListenIgnoresOtherSchemas: a notification channel belongs to the whole Postgres database,
// so a write in another schema of it (another deployment, or another test) must not be taken for
// one of ours: the first notification heard after writes in both schemas is our own write's.
func TestListenIgnoresOtherSchemas(t *testing.T) {
	ours, theirs := storagetest.Open(t, "postgres"), storagetest.Open(t, "postgres")
	newTenant(t, ours, "acme", "alice")
	newTenant(t, theirs, "acme", "alice")
	newTenant(t, theirs, "beta", "bob")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := make(chan search.Notice, 16)
	if err := ours.Listen(ctx, out, nil, func(err error) { t.Log(err) }); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, storage.NewCardStore(theirs), "beta", newCard("agt1", 1))
	mustCreate(t, storage.NewCardStore(theirs), "acme", newCard("agt1", 1))
	mustCreate(t, storage.NewCardStore(ours), "acme", newCard("agt2", 1))
	// Notifications arrive in commit order: had the other schema's reached us, they would come
	// first.
	if got := nextNotification(t, out, "our write"); got.Tenant != "acme" {
		t.Fatalf("heard %+v first, want our own write to acme", got)
	}
	select {
	case got := <-out:
		t.Fatalf("heard %+v more, from the other schema", got)
	default:
	}
}

// TestListenResyncCatchesUpTheIndex: the index of a replica that follows only by notification
// (no polling here) still gets a card written while its LISTEN connection was down, because the
// resync that Listen runs once LISTEN is back syncs every loaded tenant. Without the resync the
// card would stay unfound until the next poll.
func TestListenResyncCatchesUpTheIndex(t *testing.T) {
	db := storagetest.Open(t, "postgres")
	newTenant(t, db, "acme", "alice")
	store := storage.NewCardStore(db)
	index := search.NewIndex(store, store)
	svc := &search.Service{Store: store, Gate: &tenants.Service{Store: storage.NewTenantStore(db)}, Authz: authztest.AllowAll{}, Index: index}
	ctx, cancel := context.WithCancel(authz.WithPrincipal(context.Background(), authz.Principal{Subject: "alice", Tenant: "acme"}))
	defer cancel()
	found := func() int {
		t.Helper()
		res, err := svc.Search(ctx, "acme", search.Query{})
		if err != nil {
			t.Fatal(err)
		}
		return res.Total
	}
	if n := found(); n != 0 { // loads acme's index
		t.Fatalf("%d cards before any write", n)
	}
	pids := make(chan uint32, 64)
	release := make(chan struct{})
	var connections atomic.Int32
	storage.SetBeforeListen(db, func(pid uint32) {
		if connections.Add(1) == 2 {
			<-release
		}
		pids <- pid
	})
	resynced := make(chan struct{}, 64)
	errs := make(chan error, 64)
	out := make(chan search.Notice, 64) // heard, but nothing here syncs on it
	resync := func() {
		index.SyncLoaded(ctx, func(tenant tenants.ID, err error) { t.Errorf("sync %s: %v", tenant, err) })
		resynced <- struct{}{}
	}
	if err := db.Listen(ctx, out, resync, func(err error) { errs <- err }); err != nil {
		t.Fatal(err)
	}
	<-resynced
	if err := execErr(db.SQL().Exec("SELECT pg_terminate_backend($1)", int64(<-pids))); err != nil {
		t.Fatal(err)
	}
	select {
	case <-errs:
	case <-time.After(10 * time.Second):
		t.Fatal("the cut connection was not noticed")
	}
	mustCreate(t, store, "acme", newCard("agt1", 1)) // as another replica would: the index is not told
	if n := found(); n != 0 {
		t.Fatalf("the index found the card before any sync: %d", n)
	}
	close(release)
	select {
	case <-resynced:
	case <-time.After(10 * time.Second):
		t.Fatal("no resync after LISTEN was established again")
	}
	if n := found(); n != 1 {
		t.Fatalf("after the resync the index finds %d cards, want the one written during the gap", n)
	}
}

// execErr keeps the error of an Exec.
func execErr(_ sql.Result, err error) error { return err }

// listening opens two DBs of one Postgres schema with the tenant acme, the second listening:
// it returns the first, the notices the second hears, and the schema.
func listening(t *testing.T) (*storage.DB, <-chan search.Notice, string) {
	t.Helper()
	dbs := storagetest.OpenShared(t, "postgres", 2)
	writer, listener := dbs[0], dbs[1]
	newTenant(t, writer, "acme")
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	out := make(chan search.Notice, 64)
	if err := listener.Listen(ctx, out, nil, func(err error) { t.Log(err) }); err != nil {
		t.Fatal(err)
	}
	var schema string
	if err := writer.SQL().QueryRowContext(ctx, "SELECT current_schema()").Scan(&schema); err != nil {
		t.Fatal(err)
	}
	return writer, out, schema
}

// TestCardWritesNotifiedAfterCommit: on Postgres a card's create, replace and delete and a
// tenant's deletion are notified with their feed entries (a batch with its tenant) once committed (sent after the write by the writing DB's notifier, not in
// its transaction), in the order written, and a notification still pending when the writing DB
// closes is sent before Close returns.
func TestCardWritesNotifiedAfterCommit(t *testing.T) {
	writer, out, schema := listening(t)
	ctx := context.Background()
	s := storage.NewCardStore(writer)
	rev, err := s.Create(ctx, "acme", newCard("agt1", 1))
	if err != nil {
		t.Fatal(err)
	}
	n := nextNotification(t, out, "create")
	if n.Tenant != "acme" || n.AgentID != "agt1" || n.Op != "create" || n.Revision != rev || n.Seq == 0 {
		t.Fatalf("create notified as %+v, want agt1 create at revision %d", n, rev)
	}
	c := newCard("agt1", rev+1)
	if err := s.Replace(ctx, "acme", c, rev); err != nil {
		t.Fatal(err)
	}
	if u := nextNotification(t, out, "replace"); u.AgentID != "agt1" || u.Op != "update" || u.Revision != rev+1 || u.Seq <= n.Seq {
		t.Fatalf("replace notified as %+v after %+v", u, n)
	}
	// In the order written, and a notice still queued when the writer closes (as one queued
	// just after its sender's last round) is sent before Close returns.
	for _, id := range []string{"agt2", "agt3", "agt4"} {
		mustCreate(t, s, "acme", newCard(id, 1))
	}
	for _, want := range []string{"agt2", "agt3", "agt4"} {
		if got := nextNotification(t, out, want); got.AgentID != want || got.Op != "create" {
			t.Fatalf("notified %+v, want %s created", got, want)
		}
	}
	// A batch: one notice naming the tenant, sent once it committed.
	if err := s.CreateMany(ctx, "acme", prepared(t, newCard("b1", 1), newCard("b2", 1))); err != nil {
		t.Fatal(err)
	}
	if got := nextNotification(t, out, "a batch"); got.Tenant != "acme" || got.Seq != 0 || got.AgentID != "" {
		t.Fatalf("a batch notified as %+v, want the tenant alone", got)
	}
	// A delete, with its entry, and a tenant's deletion (a purge, which names no agent: heard as
	// naming the tenant), each once committed.
	if err := s.Delete(ctx, "acme", "agt2", 0); err != nil {
		t.Fatal(err)
	}
	if got := nextNotification(t, out, "a delete"); got.AgentID != "agt2" || got.Op != "delete" || got.Revision != 1 || got.Seq == 0 {
		t.Fatalf("a delete notified as %+v, want agt2 deleted at revision 1", got)
	}
	newTenant(t, writer, "gone")
	if err := storage.NewTenantStore(writer).Delete(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	if got := nextNotification(t, out, "a purge"); got.Tenant != "gone" || got.AgentID != "" {
		t.Fatalf("a tenant's deletion notified as %+v, want the tenant (its followers then read the purge)", got)
	}
	storage.QueueNoticeQuietly(writer, schema+" acme 999999 create 1 agt5")
	if err := writer.Close(); err != nil {
		t.Fatal(err)
	}
	if got := nextNotification(t, out, "agt5"); got.AgentID != "agt5" {
		t.Fatalf("notified %+v, want agt5", got)
	}
}

// TestDroppedNotificationsCounted: a notification the writer could not send (its statement
// failed: here a payload over Postgres's limit) or queued after Close is counted, and the sender
// goes on with the next ones.
func TestDroppedNotificationsCounted(t *testing.T) {
	writer, out, schema := listening(t)
	storage.NotifyAfter(writer, schema+" acme 1 create 1 "+strings.Repeat("x", 9000)) // over 8,000 bytes
	for deadline := time.Now().Add(10 * time.Second); writer.NotificationsDropped() != 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d notifications counted as dropped 10s after one failed, want 1", writer.NotificationsDropped())
		}
	}
	mustCreate(t, storage.NewCardStore(writer), "acme", newCard("agt1", 1))
	if n := nextNotification(t, out, "the write after"); n.AgentID != "agt1" {
		t.Fatalf("notified %+v, want agt1", n)
	}
	if err := writer.Close(); err != nil {
		t.Fatal(err)
	}
	storage.NotifyAfter(writer, schema+" acme 2 create 1 agt2")
	if got := writer.NotificationsDropped(); got != 2 {
		t.Fatalf("%d notifications counted as dropped after one queued past Close, want 2", got)
	}
}
