package storage_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards/follow"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/tenants/audit"
)

// newSource is a source of kind at where (a URL, or for a2a-urls a comma-separated list),
// created and due at at.
func newSource(id, kind, where string, at time.Time) follow.Source {
	s := follow.Source{ID: id, Kind: kind, State: follow.StateSyncing, NextSyncAt: at, CreatedAt: at, UpdatedAt: at}
	if kind == follow.KindA2AURLs {
		s.URLs = strings.Split(where, ",")
	} else {
		s.URL = where
	}
	return s
}

// sourceTrail reads the tenant's audit entries of sources, oldest first, as "principal action
// object detail".
func sourceTrail(t *testing.T, db *storage.DB, tenant tenants.ID) []string {
	t.Helper()
	entries, err := storage.NewAuditStore(db).List(context.Background(), tenant, audit.Filter{ObjectPrefix: "sources/"})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(entries))
	for i, e := range entries {
		out[len(entries)-1-i] = fmt.Sprintf("%s %s %s %s", e.Principal, e.Action, e.Object, e.Detail)
	}
	return out
}

// TestSourceCreateAndRead: sources are stored as given, with their sealed token kept out of the
// source (only whether there is one), and read back oldest first; a tenant has at most max; a
// second source of the same kind and URL (for a2a-urls, the same URLs in any order) is a
// conflict naming the first, the same URL of another kind is not; a missing tenant or source is
// not found. Each create leaves its audit entry, a refused one none, and deleting the tenant
// takes its sources.
func TestSourceCreateAndRead(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		db := storagetest.Open(t, dialect)
		s := storage.NewSourceStore(db)
		newTenant(t, db, "a", "alice")
		newTenant(t, db, "b", "bob")
		ctx := asAlice("sources.create")
		at := fixed
		specs := []struct {
			src   follow.Source
			token string
		}{
			{newSource("src_03", follow.KindAgentcards, "https://peer.example.com/v1/tenants/acme", at), "sealed-token"},
			{newSource("src_02", follow.KindAICatalog, "https://peer.example.com/v1/tenants/acme", at.Add(time.Second)), ""},
			{newSource("src_01", follow.KindA2AURLs, "https://a.example/card.json,https://b.example/card.json", at.Add(2*time.Second)), ""},
		}
		specs[1].src.Interval = 60
		for _, sp := range specs {
			got, err := s.Create(ctx, "a", sp.src, sp.token, 3)
			if err != nil {
				t.Fatal(err)
			}
			if got.ID != sp.src.ID || got.Token != (sp.token != "") || got.State != follow.StateSyncing || !got.CreatedAt.Equal(sp.src.CreatedAt) ||
				got.CreatedAt.Location() != time.UTC || !got.NextSyncAt.Equal(sp.src.NextSyncAt) || got.LastSyncAt != nil || got.Conflicts != nil {
				t.Errorf("created %+v", got)
			}
		}
		list, err := s.List(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, src := range list {
			ids = append(ids, src.ID)
		}
		if !slices.Equal(ids, []string{"src_03", "src_02", "src_01"}) {
			t.Errorf("listed %v, want oldest first", ids)
		}
		got, err := s.Get(ctx, "a", "src_01")
		if err != nil || got.URL != "" || !slices.Equal(got.URLs, specs[2].src.URLs) || got.Token || got.Interval != 0 {
			t.Errorf("a2a-urls source: %+v %v", got, err)
		}
		got, err = s.Get(ctx, "a", "src_02")
		if err != nil || got.URLs != nil || got.URL != specs[1].src.URL || got.Interval != 60 || got.Kind != follow.KindAICatalog {
			t.Errorf("ai-catalog source: %+v %v", got, err)
		}
		if c, ok, err := s.Claim(ctx, "a", "src_03", "one", at, at.Add(time.Minute)); err != nil || !ok || c.SealedToken != "sealed-token" || c.Cursor != "" ||
			!c.Source.Token || c.Tenant != "a" {
			t.Errorf("claimed the agentcards source: %+v %v %v", c, ok, err)
		}
		if _, err := s.Get(ctx, "a", "src_99"); fault.KindOf(err) != fault.NotFound || !strings.Contains(err.Error(), `source "src_99": not found`) {
			t.Errorf("a missing source: %v", err)
		}

		// Duplicates, whatever the bound.
		for _, dup := range []struct {
			src  follow.Source
			from string
		}{
			{newSource("src_10", follow.KindAgentcards, "https://peer.example.com/v1/tenants/acme", at), "src_03"},
			{newSource("src_11", follow.KindA2AURLs, "https://b.example/card.json,https://a.example/card.json", at), "src_01"},
		} {
			_, err := s.Create(ctx, "a", dup.src, "", 10)
			if fault.KindOf(err) != fault.Conflict || !strings.Contains(err.Error(), dup.from) {
				t.Errorf("a duplicate of %s: %v", dup.from, err)
			}
		}
		_, err = s.Create(ctx, "a", newSource("src_12", follow.KindAgentcards, "https://peer.example.com/v1/tenants/other", at), "", 3)
		if fault.KindOf(err) != fault.Conflict || !strings.Contains(err.Error(), "3 sources") {
			t.Errorf("a fourth of three: %v", err)
		}
		if _, err := s.Create(ctx, "a", newSource("src_12", follow.KindA2AURLs, "https://a.example/card.json", at), "", 4); err != nil {
			t.Errorf("a subset of another's URLs: %v", err)
		}
		if _, err := s.Create(ctx, "nope", newSource("src_13", follow.KindAICatalog, "https://x.example/", at), "", 3); fault.KindOf(err) != fault.NotFound {
			t.Errorf("in a missing tenant: %v", err)
		}
		// The other tenant may follow the same.
		if _, err := s.Create(ctx, "b", newSource("src_03", follow.KindAgentcards, "https://peer.example.com/v1/tenants/acme", at), "", 1); err != nil {
			t.Errorf("the same source in another tenant: %v", err)
		}

		want := []string{
			"alice sources.create sources/src_03 created: agentcards https://peer.example.com/v1/tenants/acme",
			"alice sources.create sources/src_02 created: ai-catalog https://peer.example.com/v1/tenants/acme",
			"alice sources.create sources/src_01 created: a2a-urls 2 urls",
			"alice sources.create sources/src_12 created: a2a-urls 1 url",
		}
		if got := sourceTrail(t, db, "a"); !slices.Equal(got, want) {
			t.Errorf("trail:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}

		if err := storage.NewTenantStore(db).Delete(ctx, "a"); err != nil {
			t.Fatal(err)
		}
		newTenant(t, db, "a", "alice")
		if l, err := s.List(ctx, "a"); err != nil || len(l) != 0 {
			t.Errorf("a tenant created again has its predecessor's sources: %+v %v", l, err)
		}
		if l, err := s.List(ctx, "b"); err != nil || len(l) != 1 {
			t.Errorf("the other tenant's sources: %+v %v", l, err)
		}
	})
}

// TestSourceLease: one owner at a time holds a source; a claim of a held one gets nothing until
// its lease lapses; once another owner took it, the first one's progress, failure and delete
// change nothing. Progress writes what it sets: Synced makes the source active and clears its
// failures, Release gives the lease up until Next; Fail counts failures up, keeps the error
// (clipped) and gives the lease up.
func TestSourceLease(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		db := storagetest.Open(t, dialect)
		s := storage.NewSourceStore(db)
		newTenant(t, db, "a", "alice")
		ctx := context.Background()
		now := time.Now().UTC().Truncate(time.Second)
		if _, err := s.Create(ctx, "a", newSource("src_01", follow.KindAgentcards, "https://peer.example.com/v1/tenants/acme", now), "tok", 5); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := s.Claim(ctx, "a", "src_01", "one", now, now.Add(time.Minute)); err != nil || !ok {
			t.Fatalf("first claim: %v %v", ok, err)
		}
		if _, ok, _ := s.Claim(ctx, "a", "src_01", "two", now.Add(30*time.Second), now.Add(2*time.Minute)); ok {
			t.Fatal("a held lease was claimed")
		}
		if _, ok, err := s.Claim(ctx, "a", "src_01", "one", now.Add(30*time.Second), now.Add(90*time.Second)); err != nil || !ok {
			t.Fatalf("the owner's claim again: %v %v", ok, err)
		}
		cursor, n, conflicts := "c1", 7, []string{"x", "y"}
		if ok, err := s.Progress(ctx, "a", "src_01", "one", follow.Progress{Cursor: &cursor, Cards: &n, Until: now.Add(2 * time.Minute)}); err != nil || !ok {
			t.Fatalf("the owner's progress: %v %v", ok, err)
		}
		if got, _ := s.Get(ctx, "a", "src_01"); got.Cards != 7 || got.State != follow.StateSyncing || got.LastSyncAt != nil {
			t.Errorf("after progress: %+v", got)
		}
		if _, ok, _ := s.Claim(ctx, "a", "src_01", "two", now.Add(90*time.Second), now.Add(3*time.Minute)); ok {
			t.Fatal("a renewed lease was claimed before it lapsed")
		}

		// The lease lapses; two takes over, and one can no longer write.
		later := now.Add(3 * time.Minute)
		c, ok, err := s.Claim(ctx, "a", "src_01", "two", later, later.Add(time.Minute))
		if err != nil || !ok || c.Cursor != "c1" || c.Source.Cards != 7 || c.SealedToken != "tok" {
			t.Fatalf("claim after the lapse: %+v %v %v", c, ok, err)
		}
		stale, m := "stale", 99
		if ok, err := s.Progress(ctx, "a", "src_01", "one", follow.Progress{Cursor: &stale, Cards: &m, Synced: true, At: later,
			Release: true, Next: later}); err != nil || ok {
			t.Errorf("a lost lease made progress: %v %v", ok, err)
		}
		if err := s.Fail(ctx, "a", "src_01", "one", follow.Failure{At: later, Next: later, Error: "x"}); err != nil {
			t.Fatal(err)
		}
		if ok, err := s.Progress(ctx, "a", "src_99", "one", follow.Progress{Cards: &m}); err != nil || ok {
			t.Errorf("progress of a missing source: %v %v", ok, err)
		}
		if c, ok, _ := s.Claim(ctx, "a", "src_01", "two", later, later.Add(time.Minute)); !ok || c.Cursor != "c1" || c.Source.Cards != 7 ||
			c.Source.Failures != 0 || c.Source.State != follow.StateSyncing {
			t.Fatalf("after the stale writes: %+v %v", c, ok)
		}

		// Synced and released: active, due at Next, anyone may claim it.
		next := later.Add(time.Hour)
		if ok, err := s.Progress(ctx, "a", "src_01", "two", follow.Progress{Conflicts: &conflicts, Synced: true, At: later,
			Release: true, Next: next}); err != nil || !ok {
			t.Fatalf("synced: %v %v", ok, err)
		}
		got, err := s.Get(ctx, "a", "src_01")
		if err != nil || got.State != follow.StateActive || got.LastSyncAt == nil || !got.LastSyncAt.Equal(later) || !got.NextSyncAt.Equal(next) ||
			!slices.Equal(got.Conflicts, conflicts) || got.Cards != 7 || !got.UpdatedAt.Equal(now) {
			t.Errorf("after a sync: %+v %v", got, err)
		}
		if ok, _ := s.Progress(ctx, "a", "src_01", "two", follow.Progress{Cards: &m}); ok {
			t.Error("progress after the release")
		}
		if _, ok, _ := s.Claim(ctx, "a", "src_01", "three", later, later.Add(time.Minute)); !ok {
			t.Fatal("a released source was not claimed")
		}
		// A renewal that moves when it is due keeps the lease.
		if ok, err := s.Progress(ctx, "a", "src_01", "three", follow.Progress{Until: later.Add(2 * time.Minute), Next: later.Add(5 * time.Minute)}); err != nil || !ok {
			t.Fatalf("renewal: %v %v", ok, err)
		}
		if got, _ := s.Get(ctx, "a", "src_01"); !got.NextSyncAt.Equal(later.Add(5 * time.Minute)) {
			t.Errorf("next sync after a renewal: %v", got.NextSyncAt)
		}
		if _, ok, _ := s.Claim(ctx, "a", "src_01", "two", later.Add(time.Minute), later.Add(time.Hour)); ok {
			t.Fatal("a renewed lease was claimed")
		}
		empty := []string{}
		if ok, _ := s.Progress(ctx, "a", "src_01", "three", follow.Progress{Conflicts: &empty, Until: later.Add(2 * time.Minute)}); !ok {
			t.Fatal("the holder's progress refused")
		}
		if got, _ := s.Get(ctx, "a", "src_01"); got.Conflicts != nil {
			t.Errorf("conflicts cleared: %#v", got.Conflicts)
		}

		// Failures count up and give the lease up; a sync that ends well clears them.
		long := strings.Repeat("é", 200) // 400 bytes
		for i := range 2 {
			if _, ok, _ := s.Claim(ctx, "a", "src_01", "three", later, later.Add(2*time.Minute)); !ok {
				t.Fatalf("claim before failure %d", i)
			}
			at := later.Add(time.Duration(i) * time.Minute)
			if err := s.Fail(ctx, "a", "src_01", "three", follow.Failure{At: at, Next: at.Add(time.Second), Error: fmt.Sprint("answered 50", i, " ", long)}); err != nil {
				t.Fatal(err)
			}
		}
		got, err = s.Get(ctx, "a", "src_01")
		if err != nil || got.State != follow.StateFailing || got.Failures != 2 || !strings.HasPrefix(got.LastError, "answered 501 é") ||
			len(got.LastError) > 300 || !strings.HasSuffix(got.LastError, "é") || !got.NextSyncAt.Equal(later.Add(time.Minute+time.Second)) {
			t.Fatalf("after two failures: %+v %v", got, err)
		}
		if _, ok, _ := s.Claim(ctx, "a", "src_01", "four", later, later.Add(time.Minute)); !ok {
			t.Fatal("a failed source keeps its lease")
		}
		if ok, err := s.Progress(ctx, "a", "src_01", "four", follow.Progress{Synced: true, At: later, Until: later.Add(time.Minute)}); err != nil || !ok {
			t.Fatal(ok, err)
		}
		if got, _ := s.Get(ctx, "a", "src_01"); got.State != follow.StateActive || got.Failures != 0 || got.LastError != "" {
			t.Errorf("after a sync: %+v", got)
		}
	})
}

// TestSourceRemovingAndDue: Due lists the sources of active tenants due and not leased, those due
// longest first, removing ones included. Removing marks a source removing once (one audit
// entry), clears its lease and makes it due; a sync's progress or failure leaves it removing;
// only a holder of its lease deletes it, and only once it is removing.
func TestSourceRemovingAndDue(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		db := storagetest.Open(t, dialect)
		s := storage.NewSourceStore(db)
		newTenant(t, db, "a", "alice")
		newTenant(t, db, "b", "bob")
		ctx := asAlice("sources.create")
		now := time.Now().UTC().Truncate(time.Second)
		create := func(tenant tenants.ID, id string, due time.Time) {
			t.Helper()
			src := newSource(id, follow.KindAICatalog, "https://"+id+".example/catalog.json", now)
			src.NextSyncAt = due
			if _, err := s.Create(ctx, tenant, src, "", 10); err != nil {
				t.Fatal(err)
			}
		}
		create("a", "src_01", now.Add(-time.Minute))
		create("a", "src_02", now.Add(-2*time.Minute))
		create("a", "src_03", now.Add(time.Minute)) // not yet due
		create("a", "src_04", now.Add(-3*time.Minute))
		create("b", "src_05", now.Add(-time.Hour)) // its tenant is suspended
		ts := storage.NewTenantStore(db)
		b, err := ts.Get(ctx, "b")
		if err != nil {
			t.Fatal(err)
		}
		b.Status, b.UpdatedAt = tenants.StatusSuspended, fixed
		if err := ts.Update(ctx, b); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := s.Claim(ctx, "a", "src_04", "one", now, now.Add(time.Minute)); err != nil || !ok {
			t.Fatalf("claim: %v %v", ok, err)
		}
		due := func(at time.Time, limit int) []string {
			t.Helper()
			l, err := s.Due(ctx, at, limit)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, d := range l {
				out = append(out, string(d.Tenant)+"/"+d.ID)
			}
			return out
		}
		if got := due(now, 10); !slices.Equal(got, []string{"a/src_02", "a/src_01"}) {
			t.Errorf("due: %v", got)
		}
		if got := due(now, 1); !slices.Equal(got, []string{"a/src_02"}) {
			t.Errorf("due, at most one: %v", got)
		}
		if got := due(now.Add(2*time.Minute), 10); !slices.Equal(got, []string{"a/src_04", "a/src_02", "a/src_01", "a/src_03"}) {
			t.Errorf("due once the lease lapsed: %v", got)
		}

		// Removing: once, due at at; its lease stays with its holder, who is refused all but a
		// release, and is due once released.
		rm := asAlice("sources.remove")
		at := now.Add(10 * time.Second)
		got, err := s.Removing(rm, "a", "src_04", at)
		if err != nil || got.State != follow.StateRemoving || !got.NextSyncAt.Equal(at) || !got.UpdatedAt.Equal(at) {
			t.Fatalf("removing: %+v %v", got, err)
		}
		if again, err := s.Removing(rm, "a", "src_04", at.Add(time.Hour)); err != nil || !again.UpdatedAt.Equal(at) || again.State != follow.StateRemoving {
			t.Errorf("removing twice: %+v %v", again, err)
		}
		if _, err := s.Removing(rm, "a", "src_99", at); fault.KindOf(err) != fault.NotFound {
			t.Errorf("removing a missing source: %v", err)
		}
		cursor := "after-removal"
		if ok, _ := s.Progress(ctx, "a", "src_04", "one", follow.Progress{Until: at.Add(time.Hour), Cursor: &cursor}); ok {
			t.Error("the sync of a removing source went on")
		}
		if got, _ := s.Get(ctx, "a", "src_04"); got.State != follow.StateRemoving {
			t.Errorf("after a refused progress: %+v", got)
		}
		if got := due(at, 10); !slices.Equal(got, []string{"a/src_02", "a/src_01"}) {
			t.Errorf("due with a removing source still leased: %v", got)
		}
		if _, ok, _ := s.Claim(ctx, "a", "src_04", "two", at, at.Add(time.Minute)); ok {
			t.Fatal("a removing source claimed while its sync holds it")
		}
		if ok, err := s.Progress(ctx, "a", "src_04", "one", follow.Progress{Release: true, Next: at}); err != nil || !ok {
			t.Fatalf("release of a removing source: %v %v", ok, err)
		}
		if got := due(at, 10); !slices.Equal(got, []string{"a/src_02", "a/src_01", "a/src_04"}) {
			t.Errorf("due with a removing source: %v", got)
		}
		if _, ok, err := s.Claim(ctx, "a", "src_04", "two", at, at.Add(time.Minute)); err != nil || !ok {
			t.Fatalf("claim of a removing source: %v %v", ok, err)
		}
		if ok, err := s.Progress(ctx, "a", "src_04", "two", follow.Progress{Synced: true, At: at, Until: at.Add(time.Minute)}); err != nil || ok {
			t.Fatalf("a sync's progress on a removing source: %v %v", ok, err)
		}
		if ok, err := s.Progress(ctx, "a", "src_04", "two", follow.Progress{Removing: true, Until: at.Add(time.Minute)}); err != nil || !ok {
			t.Fatalf("the removal's progress: %v %v", ok, err)
		}
		if err := s.Fail(ctx, "a", "src_04", "two", follow.Failure{At: at, Next: at, Error: "x"}); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.Get(ctx, "a", "src_04"); got.State != follow.StateRemoving || got.Failures != 1 {
			t.Errorf("a removing source after a sync and a failure: %+v", got)
		}
		if _, ok, _ := s.Claim(ctx, "a", "src_04", "two", at, at.Add(time.Minute)); !ok {
			t.Fatal("claim after the failure")
		}
		// Only the holder deletes it, and only a removing one.
		if err := s.Delete(ctx, "a", "src_04", "one"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Get(ctx, "a", "src_04"); err != nil {
			t.Errorf("deleted by a non-holder: %v", err)
		}
		if _, ok, _ := s.Claim(ctx, "a", "src_01", "two", at, at.Add(time.Minute)); !ok {
			t.Fatal("claim of src_01")
		}
		if err := s.Delete(ctx, "a", "src_01", "two"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Get(ctx, "a", "src_01"); err != nil {
			t.Errorf("a source not removing deleted: %v", err)
		}
		if err := s.Delete(ctx, "a", "src_04", "two"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Get(ctx, "a", "src_04"); fault.KindOf(err) != fault.NotFound {
			t.Errorf("after its delete: %v", err)
		}
		if err := s.Delete(ctx, "a", "src_04", "two"); err != nil {
			t.Errorf("deleted twice: %v", err)
		}

		trail := sourceTrail(t, db, "a")
		want := "alice sources.remove sources/src_04 removed: ai-catalog https://src_04.example/catalog.json"
		if len(trail) != 5 || trail[4] != want {
			t.Errorf("trail %q, want 4 creates and %q", trail, want)
		}
	})
}

// TestSourceUpdate: an update writes a new sealed token or interval with its audit entry (which
// never holds the token), makes a failing source due at once, and refuses a removing one.
func TestSourceUpdate(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		db := storagetest.Open(t, dialect)
		s := storage.NewSourceStore(db)
		newTenant(t, db, "a", "alice")
		ctx := asAlice("sources.update")
		now := time.Now().UTC().Truncate(time.Second)
		src := newSource("src_01", follow.KindAgentcards, "https://reg.example.com/v1/tenants/up", now)
		src.NextSyncAt = now.Add(time.Hour)
		if _, err := s.Create(asAlice("sources.create"), "a", src, "sealed-old", 10); err != nil {
			t.Fatal(err)
		}
		sealed := "sealed-new"
		got, err := s.Update(ctx, "a", "src_01", follow.Patch{SealedToken: &sealed, At: now})
		if err != nil || !got.Token || !got.UpdatedAt.Equal(now) || !got.NextSyncAt.Equal(now.Add(time.Hour)) {
			t.Fatalf("update: %+v %v", got, err)
		}
		if c, ok, err := s.Claim(ctx, "a", "src_01", "one", now, now.Add(time.Minute)); err != nil || !ok || c.SealedToken != "sealed-new" {
			t.Fatalf("claim after the update: %+v %v %v", c, ok, err)
		}
		if err := s.Fail(ctx, "a", "src_01", "one", follow.Failure{At: now, Next: now.Add(time.Hour), Error: "401"}); err != nil {
			t.Fatal(err)
		}
		none := ""
		later := now.Add(time.Minute)
		got, err = s.Update(ctx, "a", "src_01", follow.Patch{SealedToken: &none, At: later})
		if err != nil || got.Token || !got.NextSyncAt.Equal(later) || got.Failures != 1 || got.State != follow.StateFailing {
			t.Fatalf("update of a failing source: %+v %v", got, err)
		}
		every := 60
		if got, err = s.Update(ctx, "a", "src_01", follow.Patch{Interval: &every, At: later}); err != nil || got.Interval != 60 {
			t.Fatalf("a new interval: %+v %v", got, err)
		}
		if _, err := s.Update(ctx, "a", "src_99", follow.Patch{Interval: &every, At: later}); fault.KindOf(err) != fault.NotFound {
			t.Errorf("update of a missing source: %v", err)
		}
		if _, err := s.Removing(asAlice("sources.remove"), "a", "src_01", later); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Update(ctx, "a", "src_01", follow.Patch{Interval: &every, At: later}); fault.KindOf(err) != fault.Conflict {
			t.Errorf("update of a removing source: %v", err)
		}
		want := []string{
			"alice sources.create sources/src_01 created: agentcards https://reg.example.com/v1/tenants/up",
			"alice sources.update sources/src_01 token replaced",
			"alice sources.update sources/src_01 token removed",
			"alice sources.update sources/src_01 intervalSeconds 60",
			"alice sources.remove sources/src_01 removed: agentcards https://reg.example.com/v1/tenants/up",
		}
		if got := sourceTrail(t, db, "a"); !slices.Equal(got, want) {
			t.Errorf("the trail: %q", got)
		}
	})
}

// TestSourceBackoffListedAndOrder: a failure's backoff counts the failures stored (not the
// claimer's view); a removing source's failure is retried within 30 s, and a sync's release of it
// leaves it due at once whatever next it names; when the cards were listed is kept for the next
// claim; Due answers agentcards sources first.
func TestSourceBackoffListedAndOrder(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		t.Parallel()
		db := storagetest.Open(t, dialect)
		s := storage.NewSourceStore(db)
		newTenant(t, db, "a", "alice")
		ctx := asAlice("sources.create")
		now := time.Now().UTC().Truncate(time.Second)
		polled := newSource("src_01", follow.KindAICatalog, "https://x.example/catalog.json", now)
		polled.NextSyncAt = now.Add(-time.Hour)
		live := newSource("src_02", follow.KindAgentcards, "https://reg.example.com/v1/tenants/up", now)
		live.NextSyncAt = now
		for _, src := range []follow.Source{polled, live} {
			if _, err := s.Create(ctx, "a", src, "", 10); err != nil {
				t.Fatal(err)
			}
		}
		l, err := s.Due(ctx, now, 10)
		if err != nil || len(l) != 2 || l[0].ID != "src_02" || l[0].Kind != follow.KindAgentcards || l[1].State != follow.StateSyncing {
			t.Fatalf("due: %+v %v", l, err)
		}
		backoff := func(n int) time.Duration { return time.Duration(n) * time.Minute }
		for n := 1; n <= 3; n++ {
			if _, ok, err := s.Claim(ctx, "a", "src_02", "one", now, now.Add(time.Minute)); err != nil || !ok {
				t.Fatal(ok, err)
			}
			if err := s.Fail(ctx, "a", "src_02", "one", follow.Failure{At: now, Backoff: backoff, Error: "down"}); err != nil {
				t.Fatal(err)
			}
			if got, _ := s.Get(ctx, "a", "src_02"); got.Failures != n || !got.NextSyncAt.Equal(now.Add(time.Duration(n)*time.Minute)) {
				t.Fatalf("failure %d: %+v", n, got)
			}
		}
		c, ok, err := s.Claim(ctx, "a", "src_02", "one", now, now.Add(time.Minute))
		if err != nil || !ok || !c.ListedAt.IsZero() {
			t.Fatalf("claim before a listing: %+v %v %v", c, ok, err)
		}
		listed := now.Add(-time.Hour)
		if ok, err := s.Progress(ctx, "a", "src_02", "one", follow.Progress{ListedAt: &listed, Release: true, Next: now}); err != nil || !ok {
			t.Fatal(ok, err)
		}
		if c, _, _ := s.Claim(ctx, "a", "src_02", "two", now, now.Add(time.Minute)); !c.ListedAt.Equal(listed) {
			t.Fatalf("listed at %v, want %v", c.ListedAt, listed)
		}
		if _, err := s.Removing(asAlice("sources.remove"), "a", "src_02", now); err != nil {
			t.Fatal(err)
		}
		if ok, err := s.Progress(ctx, "a", "src_02", "two", follow.Progress{Release: true, Next: now.Add(24 * time.Hour)}); err != nil || !ok {
			t.Fatal(ok, err)
		}
		if got, _ := s.Get(ctx, "a", "src_02"); !got.NextSyncAt.Equal(now) || got.State != follow.StateRemoving {
			t.Errorf("a removing source released by its sync: %+v", got)
		}
		if _, ok, _ := s.Claim(ctx, "a", "src_01", "one", now, now.Add(time.Minute)); !ok {
			t.Fatal("claim")
		}
		if _, err := s.Removing(asAlice("sources.remove"), "a", "src_01", now); err != nil {
			t.Fatal(err)
		}
		if err := s.Fail(ctx, "a", "src_01", "one", follow.Failure{At: now, Next: now.Add(24 * time.Hour), Error: "x"}); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.Get(ctx, "a", "src_01"); !got.NextSyncAt.Equal(now.Add(30*time.Second)) || got.State != follow.StateRemoving {
			t.Errorf("a removing source after a failure: %+v", got)
		}
	})
}
