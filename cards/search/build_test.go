package search_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/authz/authztest"
	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/bench/cardgen"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/search"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/tenants"
)

// heldFeed is a change feed whose LastSeq, the first read of a build, waits until released:
// a build that takes as long as a test wants.
type heldFeed struct {
	search.Feed
	release chan struct{}
	builds  atomic.Int32
}

func (f *heldFeed) LastSeq(ctx context.Context, tenant tenants.ID) (int64, error) {
	f.builds.Add(1)
	select {
	case <-f.release:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	return f.Feed.LastSeq(ctx, tenant)
}

// TestSearchDuringBuild: a search that cannot wait for its tenant's build is answered
// unavailable (with Retry-After, as every unavailable answer is) before its deadline, not timed
// out; the build goes on, and a later search is served by that same build.
func TestSearchDuringBuild(t *testing.T) {
	store, _, _ := copyFixture(t, 20, 0)
	feed := &heldFeed{Feed: store, release: make(chan struct{})}
	ix := search.NewIndex(store, feed)
	defer ix.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	err := ix.Entry(ctx, "t")
	deadline, _ := ctx.Deadline()
	if left := time.Until(deadline); !errors.Is(err, fault.Unavailable) || left < 250*time.Millisecond {
		t.Fatalf("a search that cannot wait for the build: %v, %s before its deadline; want unavailable in time to answer", err, left)
	}
	if took := time.Since(start); took < time.Second {
		t.Fatalf("answered after %s, before the wait its deadline allows", took)
	}
	close(feed.release)
	if err := ix.Entry(context.Background(), "t"); err != nil {
		t.Fatal(err)
	}
	if n := feed.builds.Load(); n != 1 {
		t.Fatalf("%d builds, want the one the first search started", n)
	}
}

// TestBuildOnWrite: a write to a tenant of at most search.buildOnWrite cards with no index
// builds it, and the writes after it keep it current, so that the first search finds it built;
// a write to a larger tenant builds nothing; each tenant is considered once.
func TestBuildOnWrite(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, dialect string) {
		db := storagetest.Open(t, dialect)
		storagetest.CreateTenant(t, db, "t", time.Now())
		storagetest.CreateTenant(t, db, "big", time.Now())
		store := storage.NewCardStore(db)
		svc := &cards.Service{Store: store, Gate: &tenants.Service{Store: storage.NewTenantStore(db)}, Authz: authztest.AllowAll{}}
		docs := cardgen.Documents(3, 12)
		for _, doc := range docs[:6] { // big has 6 cards before any index
			if _, err := svc.Register(callerOf("big"), "big", doc); err != nil {
				t.Fatal(err)
			}
		}
		ix := search.NewIndex(store, store)
		ix.BuildOnWrite = 5
		defer ix.Close()
		svc.Index = ix

		if _, err := svc.Register(callerOf("t"), "t", docs[6]); err != nil {
			t.Fatal(err)
		}
		ix.WaitBuilds()
		if ix.Cards("t") < 0 {
			t.Fatal("a write to a tenant of one card did not build its index")
		}
		for _, doc := range docs[7:] {
			if _, err := svc.Register(callerOf("t"), "t", doc); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := svc.Register(callerOf("big"), "big", docs[11]); err != nil {
			t.Fatal(err)
		}
		ix.WaitBuilds()
		if ix.Cards("big") >= 0 {
			t.Fatal("a write to a tenant of 7 cards built its index (buildOnWrite 5)")
		}
		// t's index holds every card written, the ones after its build too: its first search
		// is answered from it without a build.
		if n := ix.Cards("t"); n != 6 {
			t.Fatalf("t's index holds %d cards, want 6", n)
		}
	})
}

// callerOf is the context of a caller of tenant (authztest.AllowAll lets it do everything).
func callerOf(tenant tenants.ID) context.Context {
	return authz.WithPrincipal(context.Background(), authz.Principal{Subject: "alice", Tenant: string(tenant)})
}
