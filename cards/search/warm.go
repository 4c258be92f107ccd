package search

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentcards/agentcards/tenants"
)

// ActivityStore keeps when each tenant was last searched.
type ActivityStore interface {
	Searched(ctx context.Context, tenant tenants.ID, at time.Time) error
	Recent(ctx context.Context, since time.Time) ([]tenants.ID, error)
}

// Warmer remembers which tenants are searched, and at start builds the indexes of those
// searched within a window, in the background, so their first search after a restart finds its
// index built.
type Warmer struct {
	Store ActivityStore
	Index *Index
	Log   *slog.Logger
	// Rerank, when set, has the embeddings of the warmed tenants' cards worked out after their
	// indexes are built (see Reranker.Warm).
	Rerank *Reranker

	mu   sync.Mutex
	last map[tenants.ID]time.Time // when this replica last recorded a search of the tenant
	done atomic.Bool
}

// activityEvery is how often a replica records that a tenant is searched.
const activityEvery = time.Minute

// Searched notes a search of the tenant: recorded at most once a minute, after the search, off
// its path.
func (w *Warmer) Searched(tenant tenants.ID) {
	now := time.Now()
	w.mu.Lock()
	if w.last == nil {
		w.last = map[tenants.ID]time.Time{}
	}
	if now.Sub(w.last[tenant]) < activityEvery {
		w.mu.Unlock()
		return
	}
	w.last[tenant] = now
	w.mu.Unlock()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := w.Store.Searched(ctx, tenant, now); err != nil && w.Log != nil {
			w.Log.Warn("recording a search failed", "tenant", tenant, "err", err)
		}
	}()
}

// Warm builds, one after another, the indexes of the tenants searched within window (most
// recent first), until they fill the memory budget if there is one, then reports itself done.
// A tenant searched meanwhile builds its own at its first search as ever (and a build under way
// serves it). With Rerank, it then works out the embeddings of those tenants' cards.
func (w *Warmer) Warm(ctx context.Context, window time.Duration) {
	built := w.warmIndexes(ctx, window)
	w.done.Store(true)
	if w.Rerank != nil && len(built) > 0 {
		start := time.Now()
		n, err := w.Rerank.Warm(ctx, w.Index.store, built)
		switch {
		case err != nil && ctx.Err() == nil && w.Log != nil:
			w.Log.Warn("warm start: embedding the cards failed; their searches embed them", "err", err)
		case err == nil && w.Log != nil:
			w.Log.Info("warm start: card embeddings worked out", "cards", n, "took", time.Since(start).Round(time.Millisecond))
		}
	}
}

// warmIndexes builds the indexes of Warm, and returns the tenants it built.
func (w *Warmer) warmIndexes(ctx context.Context, window time.Duration) []tenants.ID {
	if window <= 0 {
		return nil
	}
	start := time.Now()
	list, err := w.Store.Recent(ctx, start.Add(-window))
	if err != nil {
		if w.Log != nil {
			w.Log.Warn("warm start: cannot list the recently searched tenants; indexes build at first search", "err", err)
		}
		return nil
	}
	var built []tenants.ID
	for i, tenant := range list {
		if ctx.Err() != nil {
			return built
		}
		// Used in the order the tenants were last searched, before any search since: under a
		// memory budget the least recently searched go first.
		evicted := w.Index.evictions.Load()
		_, err := w.Index.entryUsed(ctx, tenant, start.UnixNano()-int64(i)-1)
		if w.Index.MemoryBudget > 0 && w.Index.trimNow() > evicted {
			// The budget is full: this load evicted an index (most likely itself).
			if w.Log != nil {
				w.Log.Info("warm start: stopped at the memory budget (search.memoryBudget); the other indexes load at their first search", "built", len(built), "left", len(list)-i)
			}
			break
		}
		if err != nil {
			if w.Log != nil {
				w.Log.Warn("warm start: index build failed; it builds at first search", "tenant", tenant, "err", err)
			}
			continue
		}
		built = append(built, tenant)
	}
	if w.Log != nil && len(list) > 0 {
		w.Log.Info("warm start: indexes built", "tenants", len(built), "took", time.Since(start).Round(time.Millisecond))
	}
	return built
}

// Done reports whether Warm has finished (or was never asked to run: see app).
func (w *Warmer) Done() bool { return w.done.Load() }
