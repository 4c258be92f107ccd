// Package search answers searches over a tenant's cards and lists its public ones: from an
// in-memory index per tenant (package index holds one tenant's index and its ranking), built here
// from the store, kept current from the change feed that card stores append to, written out as
// snapshots and holding an outage copy; or, without one, by reading the tenant's cards. Both give
// the same answers.
package search

import (
	"context"
	"maps"
	"time"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/liveness"
	"github.com/agentcards/agentcards/cards/search/index"
	"github.com/agentcards/agentcards/tenants"
)

// Paging bounds of a search.
const (
	DefaultLimit = index.DefaultLimit
	MaxLimit     = index.MaxLimit
)

// Query is a search over one tenant's cards (see index.Query).
type Query = index.Query

// Authorizer says which of the tenant's cards the caller in ctx may read. A search cannot be
// served by an Authorizer that cannot say it, so it has no way to fail open.
type Authorizer interface {
	// ReadFilter says which cards of the tenant the caller may read: nil means all of them.
	ReadFilter(ctx context.Context, tenant string) (func(agentID string) bool, error)
}

// Gate admits the caller in ctx into a tenant and returns the context that carries the tenant's
// policy version: Enter for a caller of the tenant (it exists, is the caller's, is active),
// EnterPublished for anyone (it exists and is active). tenants.Service is the one gate.
type Gate interface {
	Enter(ctx context.Context, tenant string) (context.Context, error)
	EnterPublished(ctx context.Context, tenant string) (context.Context, error)
}

// Service is what the API does to find cards: searches, and the list of public cards. Both
// entry points pass the tenant gate first.
type Service struct {
	Store cards.Store
	Gate  Gate
	Authz Authorizer
	// Index answers searches from memory; nil means every search reads the tenant's cards
	// (search.index: none).
	Index *Index
	// Liveness says which agents are online: served with each hit, and the online filter.
	// Without it every card is unknown.
	Liveness *liveness.Tracker
	// Observe, when set, is told each answered search's shape (see Shape) and duration.
	Observe func(shape string, d time.Duration)
	// Activity, when set, is told of each tenant searched (the Warmer remembers them).
	Activity interface{ Searched(tenant tenants.ID) }
	// Rerank, when set, orders the first matches of each q search again by a sentence
	// encoder (search.encoder).
	Rerank *Reranker
}

// Search answers a query over the tenant's cards with only the cards the caller may read. With
// an Index it runs in memory; without one it reads every card of the tenant and filters them,
// which gives the same answers, slower.
func (s *Service) Search(ctx context.Context, tenant tenants.ID, q Query) (Result, error) {
	start := time.Now()
	res, err := s.search(ctx, tenant, q)
	if err == nil {
		if s.Observe != nil {
			s.Observe(q.Shape(), time.Since(start))
		}
		if s.Activity != nil {
			s.Activity.Searched(tenant)
		}
	}
	return res, err
}

// search is Search without the metrics: it admits the caller, compiles the query, finds the
// page's matches and builds the answer from their cards.
func (s *Service) search(ctx context.Context, tenant tenants.ID, q Query) (Result, error) {
	ctx, err := s.admit(ctx, tenant)
	if err != nil {
		return Result{}, err
	}
	if sets := tenants.SynonymsFrom(ctx, tenant); sets != nil {
		q.Synonyms = sets
	}
	p, err := q.Compile()
	if err != nil {
		return Result{}, err
	}
	var l liveness.Lookup
	readable, lookup, err := s.policy(ctx, tenant, &p, &l)
	if err != nil {
		return Result{}, err
	}
	// The map stays in this frame: filled by pageCards, read by buildResult.
	got := make(map[string]*rendered, p.Limit())
	var m matchPage
	switch {
	case s.Rerank != nil && p.Ranked() && !p.Resumed():
		if m, p, err = s.reranked(ctx, tenant, q.Q, &p, readable, lookup, got); err != nil {
			return Result{}, err
		}
	default:
		if offset, _ := p.Block(); offset > 0 {
			return Result{}, errBlockCursor
		}
		if m, err = s.matches(ctx, tenant, &p, readable, lookup); err != nil {
			return Result{}, err
		}
		if err := s.pageCards(ctx, tenant, m.page, m.cached, got); err != nil {
			return Result{}, err
		}
	}
	return buildResult(&p, m, got, lookup), nil
}

// admit lets an authenticated caller into the tenant through the gate, and returns the context
// that carries the tenant's policy version.
func (s *Service) admit(ctx context.Context, tenant tenants.ID) (context.Context, error) {
	if _, err := authz.Caller(ctx); err != nil {
		return nil, err
	}
	return s.Gate.Enter(ctx, string(tenant))
}

// policy returns what the search must hold to: the caller's read filter (nil: every card), and
// the tenant's liveness when the server keeps it, read into l (nil otherwise). A plan that
// filters on liveness is invalid on a server that keeps none. l belongs to the caller so that
// the lookup stays in the caller's frame.
func (s *Service) policy(ctx context.Context, tenant tenants.ID, p *index.Plan, l *liveness.Lookup) (func(string) bool, *liveness.Lookup, error) {
	readable, err := s.Authz.ReadFilter(ctx, string(tenant))
	if err != nil {
		return nil, nil, err
	}
	if s.Liveness == nil {
		if p.AsksOnline() {
			return nil, nil, fault.New(fault.Invalid, "online: this server keeps no liveness: invalid")
		}
		return readable, nil, nil
	}
	if *l, err = s.Liveness.Lookup(ctx, tenant); err != nil {
		return nil, nil, err
	}
	return readable, l, nil
}

// matchPage is one page of matches: the page in answer order, the cards the index's cache holds
// for it (by position, nil without an index), the count of every match and the next page's
// position.
type matchPage struct {
	page   []index.Candidate
	cached []*rendered
	total  int
	next   *index.Position
	// similarity is the encoder's part in the place of each card of a re-ranked block.
	similarity map[string]index.Similarity
}

// matches finds the page of p's matches: from the index when there is one, else by reading and
// filtering every card of the tenant.
func (s *Service) matches(ctx context.Context, tenant tenants.ID, p *index.Plan, readable func(string) bool, lookup *liveness.Lookup) (matchPage, error) {
	var m matchPage
	var err error
	if s.Index != nil {
		m.page, m.cached, m.total, m.next, err = s.Index.search(ctx, tenant, p, readable, s.Liveness)
	} else {
		m.page, m.total, m.next, err = s.scan(ctx, tenant, p, readable, lookup)
	}
	return m, err
}

// pageCards puts into got the rendered cards of the page by agentId: those the index's cache or
// its outage copy holds in the indexed version, the others from the database; while the database
// does not answer, from the outage copy only. A card removed since the page was found stays
// absent.
func (s *Service) pageCards(ctx context.Context, tenant tenants.ID, page []index.Candidate, cached []*rendered, got map[string]*rendered) error {
	var missing []string
	for i, c := range page {
		if cached != nil && cached[i] != nil {
			got[c.AgentID()] = cached[i]
		} else {
			missing = append(missing, c.AgentID())
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if s.Index != nil && s.Index.Copy != nil && !tenants.Stale(ctx) {
		// A card the outage copy holds in the version the index found is answered from it,
		// as from the render cache (as fresh as the index, like the cache): decoding it costs
		// less than reading it.
		copied, lacking, gone := s.Index.copied(tenant, missing)
		for id, r := range copied {
			got[id] = r
			s.Index.remember(tenant, r.card, r)
		}
		if missing = append(lacking, gone...); len(missing) == 0 {
			return nil
		}
	}
	var found []cards.Card
	if !tenants.Stale(ctx) {
		var err error
		if found, err = s.Store.GetMany(ctx, tenant, missing); err != nil && !tenants.FoundDown(ctx, err) {
			return err
		}
		// Else the database stopped answering since the gate let the request in: memory
		// answers, as below.
	}
	if tenants.Stale(ctx) {
		return s.recallCards(got, tenant, missing)
	}
	for _, c := range found {
		r, err := render(c)
		if err != nil {
			return err
		}
		got[c.AgentID] = r
		if s.Index != nil {
			s.Index.remember(tenant, c, r)
		}
	}
	return nil
}

// recallCards adds the missing cards to got from the outage copy, for a request the database
// did not answer a moment ago. The copy answers only if the index keeps one that holds them all;
// else only the database has them.
func (s *Service) recallCards(got map[string]*rendered, tenant tenants.ID, missing []string) error {
	if s.Index == nil {
		return errNotInMemory
	}
	recalled, lacking := s.Index.recall(tenant, missing)
	maps.Copy(got, recalled)
	if len(lacking) > 0 {
		return errNotInMemory
	}
	return nil
}

// buildResult builds the answer: a hit per card of the page still in got, with its liveness, and
// for a q search its score and matched capabilities, for a search by resource the resources
// that matched.
func buildResult(p *index.Plan, m matchPage, got map[string]*rendered, lookup *liveness.Lookup) Result {
	res := Result{Total: m.total, Items: make([]Hit, 0, len(m.page))}
	for _, c := range m.page {
		r, ok := got[c.AgentID()]
		if !ok {
			continue // removed since the index answered
		}
		h := Hit{Card: r.card, raw: r.json}
		if lookup != nil {
			l := lookup.Of(r.card.AgentID, r.card.ID)
			h.Card.Liveness = &l
		}
		if score, ok := p.Score(c); ok {
			h.Score = &score
			h.MatchedCapabilities = p.MatchedCapabilities(r.card, r.capabilityTerms())
			h.Explain = p.Explain(r.card)
			if sim, ok := m.similarity[c.AgentID()]; ok && h.Explain != nil {
				h.Explain.Similarity = &sim
			}
		}
		if p.FiltersResources() {
			h.MatchedResources = p.MatchedResources(r.card)
		}
		res.Items = append(res.Items, h)
	}
	if m.next != nil {
		res.NextCursor = m.next.Cursor()
	}
	return res
}

// scan is search.index: none, the reference systems' approach: read every card of the tenant
// from the database and filter them in the application.
func (s *Service) scan(ctx context.Context, tenant tenants.ID, p *index.Plan, readable func(string) bool, lookup *liveness.Lookup) ([]index.Candidate, int, *index.Position, error) {
	ids, err := s.Store.IDs(ctx, tenant)
	if err != nil {
		return nil, 0, nil, err
	}
	scan := p.Scan()
	err = getInBatches(ctx, s.Store, tenant, ids, func(batch []cards.Card) {
		for _, c := range batch {
			visible := readable == nil || readable(c.AgentID)
			online := visible && p.AsksOnline() && lookup.Of(c.AgentID, c.ID).State == cards.Online
			scan.Add(c, visible, online)
		}
	})
	if err != nil {
		return nil, 0, nil, err
	}
	page, total, next := scan.Page()
	return page, total, next, nil
}

// errNotInMemory refuses a page while the database does not answer when memory lacks a card of
// it.
var errNotInMemory = fault.New(fault.Unavailable, "the database is unavailable, and the cards of this page are not in memory; try again later")
