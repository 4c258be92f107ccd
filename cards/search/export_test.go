package search

import (
	"context"

	"github.com/agentcards/agentcards/tenants"
)

// KeptOverhead is keptOverhead, for tests that size an outage copy.
const KeptOverhead = keptOverhead

// LoadCopy builds the tenant's index, if it is not loaded, and fills its outage copy (the fill
// the build started may still run: both keep the same versions).
func (ix *Index) LoadCopy(tenant tenants.ID) error {
	e, err := ix.entry(context.Background(), tenant)
	if err != nil {
		return err
	}
	if ix.Copy != nil {
		ix.fillCopy(tenant, e)
	}
	return nil
}

// Load builds the tenant's index, if it is not loaded (its fill runs in the background).
func (ix *Index) Load(tenant tenants.ID) error {
	_, err := ix.entry(context.Background(), tenant)
	return err
}

// CopySize is the cards of the tenant's outage copy and the bytes counted for them.
func (ix *Index) CopySize(tenant tenants.ID) (int, int) {
	e, _ := ix.loaded(context.Background(), tenant, false)
	if e == nil {
		return 0, 0
	}
	return e.cache.copySize()
}

// CachedCards is the number of cards of the tenant's render cache.
func (ix *Index) CachedCards(tenant tenants.ID) int {
	e, _ := ix.loaded(context.Background(), tenant, false)
	if e == nil {
		return 0
	}
	n, _ := e.cache.size()
	return n
}

// Distrust is what a failed read-back after a write does to the agents' cards in memory.
func (ix *Index) Distrust(tenant tenants.ID, agentIDs ...string) {
	if e, _ := ix.loaded(context.Background(), tenant, false); e != nil {
		e.cache.distrust(agentIDs, e.reads.Load())
	}
}

// CopyOlder replaces the agent's card in the outage copy with the same card one revision older.
func (ix *Index) CopyOlder(tenant tenants.ID, agentID string) {
	e, _ := ix.loaded(context.Background(), tenant, false)
	if e == nil {
		return
	}
	e.x.RLock()
	h, _ := e.x.Held(agentID)
	e.x.RUnlock()
	s, ok := e.cache.copyOf(agentID, h)
	if !ok {
		return
	}
	s.Revision--
	e.cache.keep(agentID, keptOf(s))
}

// WaitFills waits for the outage copies' fills that builds started.
func (ix *Index) WaitFills() { ix.filling.Wait() }

// WaitBuilds waits for the builds under way and those writes started.
func (ix *Index) WaitBuilds() { ix.building.Wait() }

// Entry is entry: the tenant's index, built or being built, waited for within ctx.
func (ix *Index) Entry(ctx context.Context, tenant tenants.ID) error {
	_, err := ix.entry(ctx, tenant)
	return err
}

// Cards is the number of live cards of the tenant's index; -1 when it is not built.
func (ix *Index) Cards(tenant tenants.ID) int {
	e, _ := ix.loaded(context.Background(), tenant, false)
	if e == nil {
		return -1
	}
	e.x.RLock()
	defer e.x.RUnlock()
	return e.x.Live()
}

// ForgetAnswers empties the tenant's render cache, so the next search answers its cards for the
// first time (from the database).
func (ix *Index) ForgetAnswers(tenant tenants.ID) {
	e, _ := ix.loaded(context.Background(), tenant, false)
	if e == nil {
		return
	}
	e.cache.mu.Lock()
	defer e.cache.mu.Unlock()
	e.cache.m, e.cache.bytes, e.cache.mem = nil, 0, 0
}
