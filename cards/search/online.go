package search

import (
	"context"
	"sync"
	"time"

	"github.com/agentcards/agentcards/cards/liveness"
	"github.com/agentcards/agentcards/cards/search/index"
	"github.com/agentcards/agentcards/tenants"
)

// onlineCache holds which documents of a tenant's index are online, kept while it stays true:
// the same documents, the same liveness version, and no TTL of an online card run out.
type onlineCache struct {
	mu      sync.Mutex
	set     *index.Online
	version uint64 // the tracker's version when derived
	until   time.Time
}

// onlineSet returns which documents of e are online now. The caller holds e.x's read lock.
func (e *indexEntry) onlineSet(ctx context.Context, tenant tenants.ID, tr *liveness.Tracker) (*index.Online, error) {
	version, err := tr.Version(ctx, tenant)
	if err != nil {
		return nil, err
	}
	c := &e.online
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.set != nil && c.set.Gen() == e.x.Gen() && c.version == version && tr.Now().Before(c.until) {
		return c.set, nil
	}
	var set *index.Online
	version, until, err := tr.Online(ctx, tenant, func(online func(agentID, cardID string) bool) {
		set = e.x.Online(online)
	})
	if err != nil {
		return nil, err
	}
	c.set, c.version, c.until = set, version, until
	return set, nil
}
