package app

import (
	"context"
	"log/slog"
	"time"

	"github.com/agentcards/agentcards/cards/search"
	"github.com/agentcards/agentcards/cmd/agentcards/app/metrics"
	"github.com/agentcards/agentcards/migrations"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/tenants"
)

// buildIndex builds the in-memory search index, unless NoIndex: with its snapshots on disk when
// their directory can be written, its copy of the cards for database outages, and how far back
// its follower reads the change feed, which depends on how the dialect makes writes visible.
func (a *App) buildIndex(cardStore *storage.CardStore) {
	o, db := a.opts, a.opts.DB
	if o.NoIndex {
		return
	}
	a.Index = search.NewIndex(cardStore, cardStore)
	a.Index.BuildOnWrite = o.Search.BuildOnWrite
	a.Index.MemoryBudget = o.Search.MemoryBudget
	a.Index.Versions = cardStore
	if o.Search.SnapshotDir != "" {
		s := &search.Snapshots{Dir: o.Search.SnapshotDir, Versions: cardStore, Log: o.Log, Tenants: tenantIDs(storage.NewTenantStore(db))}
		if err := s.Check(); err != nil {
			o.Log.Warn("search index snapshots are off: their directory cannot be written; every index builds from the cards", "dir", s.Dir, "err", err)
		} else {
			a.Index.Snapshots = s
		}
	}
	if o.Search.OutageCopyBytes > 0 {
		a.Index.Copy = &search.OutageCopy{Store: cardStore, Bytes: int(o.Search.OutageCopyBytes), Log: o.Log}
	}
	switch {
	case db.Dialect() == migrations.SQLite:
		// One write transaction at a time and AUTOINCREMENT sequence numbers: entries become
		// visible in sequence order, so a sync reads only what is new.
		a.Index.Window = 0
	case o.Web.RequestTimeout > 0:
		// A write's transaction lasts at most a request: the follower reads that far back.
		a.Index.Window = o.Web.RequestTimeout + 5*time.Second
	}
	if o.Web.RequestTimeout > 0 {
		a.Index.WriteBound = o.Web.RequestTimeout + 5*time.Second
	}
}

// indexSizes reports the size of each tenant's index, in the metrics' terms.
func (a *App) indexSizes() []metrics.TenantSize {
	sizes := a.Index.Sizes()
	out := make([]metrics.TenantSize, len(sizes))
	for i, s := range sizes {
		out[i] = metrics.TenantSize{Tenant: string(s.Tenant), Cards: s.Cards, Bytes: s.Bytes, CachedCards: s.CachedCards, CachedBytes: s.CachedBytes,
			CopyCards: s.CopyCards, CopyBytes: s.CopyBytes}
	}
	return out
}

// encoderStats is the re-ranking encoder's counts, in the metrics' terms.
func (a *App) encoderStats() metrics.Encoder {
	e := a.opts.Search.Rerank.Stats()
	return metrics.Encoder{QueryHits: e.QueryHits, CardHits: e.CardHits, QueryEmbeds: e.QueryEmbeds, CardEmbeds: e.CardEmbeds,
		EmbeddingSeconds: e.Embedding.Seconds(), QueriesKept: e.QueriesKept, CardsKept: e.CardsKept}
}

// indexMemory reports the memory budget's counters, in the metrics' terms.
func (a *App) indexMemory() metrics.IndexMemory {
	u := a.Index.Memory()
	return metrics.IndexMemory{Bytes: u.Bytes, Budget: u.Budget, Evictions: u.Evictions, Reloads: u.Reloads}
}

// snapshotsAtStop bounds the writing of the indexes' snapshots as the server stops: none begins
// after it (a 100k-card index takes about half a second).
const snapshotsAtStop = 15 * time.Second

// tenantIDs lists the tenants' ids, for the sweep of snapshots of tenants gone.
func tenantIDs(ts *storage.TenantStore) func(context.Context) ([]tenants.ID, error) {
	return func(ctx context.Context) ([]tenants.ID, error) {
		list, err := ts.List(ctx)
		if err != nil {
			return nil, err
		}
		ids := make([]tenants.ID, len(list))
		for i, t := range list {
			ids[i] = t.ID
		}
		return ids, nil
	}
}

// saveSnapshots writes out the indexes of which a tenth changed every search.SnapshotEvery,
// until ctx ends.
func saveSnapshots(ctx context.Context, ix *search.Index, log *slog.Logger) {
	t := time.NewTicker(search.SnapshotEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := ix.SaveChangedSnapshots(ctx); err != nil {
				log.Warn("search index snapshots not written; retrying next round", "err", err)
			}
		}
	}
}
