package search

import (
	"context"
	"slices"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/tenants"
)

// SynonymStore keeps a tenant's synonym sets on its row; storage's TenantStore is one. The gate
// reads them back with the row (Tenant.Synonyms).
type SynonymStore interface {
	// PutSynonyms creates the set or replaces the set of its id, and answers it as stored (with
	// the time it was written); a new set past tenants.MaxSynonymSets is a conflict.
	PutSynonyms(ctx context.Context, tenant tenants.ID, set tenants.SynonymSet) (tenants.SynonymSet, error)
	// RemoveSynonyms removes the set; not found when the tenant has none of that id.
	RemoveSynonyms(ctx context.Context, tenant tenants.ID, id string) error
}

// Checker answers whether the caller in ctx may act on an object of a tenant, and records a
// refused write (policy.Enforcers).
type Checker interface {
	Check(ctx context.Context, tenant, obj, act string) error
}

// Synonyms is what the API does with a tenant's synonym sets: list them, put one, remove one.
// The sets apply to the tenant's searches as their queries are read (see package index); a
// search takes them from the tenant row its gate read. A write makes this replica forget its
// row at once, so the writer's next search uses the new sets; other replicas read the row again
// within the gate's row cache TTL (tenants.Service.CacheTTL), and use the new sets from then.
//
// It is a service of its own, beside Service, so that managing the sets stays apart from
// answering searches.
type Synonyms struct {
	Store SynonymStore
	Gate  Gate
	Authz Checker
	// Forget, when set, drops this replica's cached row of the tenant after a write
	// (tenants.Service.Forget).
	Forget func(tenants.ID)
}

// List returns the tenant's synonym sets in id order, as the tenant row the gate read holds them
// (the row may come from the gate's cache). Anyone who may read every card (cards:read on
// cards/*) may read them: a searcher may see why a search matched.
func (s *Synonyms) List(ctx context.Context, tenant tenants.ID) ([]tenants.SynonymSet, error) {
	ctx, err := s.enter(ctx, tenant, authz.ObjAllCards, authz.ActCardsRead)
	if err != nil {
		return nil, err
	}
	// The row's sets are shared with every request that read it: the caller gets its own.
	sets := slices.Clone(tenants.SynonymsFrom(ctx, tenant))
	for i := range sets {
		sets[i].Words = slices.Clone(sets[i].Words)
	}
	return sets, nil
}

// Put creates the tenant's set or replaces the set of its id, and answers it as stored. It needs
// search:manage on search.
func (s *Synonyms) Put(ctx context.Context, tenant tenants.ID, set tenants.SynonymSet) (tenants.SynonymSet, error) {
	ctx, err := s.enter(ctx, tenant, authz.ObjSearch, authz.ActSearchManage)
	if err != nil {
		return tenants.SynonymSet{}, err
	}
	set.Words = slices.Clone(set.Words) // Validate trims them in place
	if err := set.Validate(); err != nil {
		return tenants.SynonymSet{}, err
	}
	stored, err := s.Store.PutSynonyms(ctx, tenant, set)
	if err != nil {
		return tenants.SynonymSet{}, err
	}
	s.forget(tenant)
	return stored, nil
}

// Remove removes the tenant's set id; not found when it has none of that id, as for an id no set
// can have (as every id in a path that names nothing). It needs search:manage on search.
func (s *Synonyms) Remove(ctx context.Context, tenant tenants.ID, id string) error {
	ctx, err := s.enter(ctx, tenant, authz.ObjSearch, authz.ActSearchManage)
	if err != nil {
		return err
	}
	if tenants.ValidateSynonymSetID(id) != nil {
		return fault.Errorf(fault.NotFound, "synonyms %q: not found", id)
	}
	if err := s.Store.RemoveSynonyms(ctx, tenant, id); err != nil {
		return err
	}
	s.forget(tenant)
	return nil
}

// enter lets an authenticated caller into the tenant through the gate and checks that it may
// act on obj; a refused write is recorded by the checker.
func (s *Synonyms) enter(ctx context.Context, tenant tenants.ID, obj, act string) (context.Context, error) {
	if _, err := authz.Caller(ctx); err != nil {
		return nil, err
	}
	ctx, err := s.Gate.Enter(ctx, string(tenant))
	if err != nil {
		return nil, err
	}
	if err := s.Authz.Check(ctx, string(tenant), obj, act); err != nil {
		return nil, err
	}
	return ctx, nil
}

// forget drops this replica's cached row of the tenant, whose sets just changed.
func (s *Synonyms) forget(tenant tenants.ID) {
	if s.Forget != nil {
		s.Forget(tenant)
	}
}
