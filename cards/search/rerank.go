package search

import (
	"cmp"
	"context"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/sync/errgroup"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/liveness"
	"github.com/agentcards/agentcards/cards/search/index"
	"github.com/agentcards/agentcards/cards/search/semantic"
	"github.com/agentcards/agentcards/tenants"
)

// Reranker orders the first matches of a q search again by meaning as well as by words: each
// card's rank is its score over the first match's score plus Weight times the cosine of a
// sentence encoder's embeddings of q and of the card. Word matching still decides which cards
// match and the block re-ranked (the first Depth of them); the encoder moves, inside it, the
// cards that say what q asks in other words above those that only share its words.
//
// Embeddings are worked out when first needed and kept: a query's (about 1 ms for a few
// words), a card version's (about 10 ms); a search over cards none of whose embeddings is kept
// pays for them. At most as many are worked out at once as there are cores.
type Reranker struct {
	Model  *semantic.Model
	Weight float64
	Depth  int

	queries *lru.Cache[tenantText, []float32]
	cards   *lru.Cache[cardVersion, semantic.Packed]
	turns   chan struct{} // one per embedding being worked out
	keep    int           // how many card versions' embeddings cards keeps

	queryHits, cardHits     atomic.Uint64 // searches' lookups that found an embedding kept
	queryEmbeds, cardEmbeds atomic.Uint64 // embeddings worked out
	embedding               atomic.Int64  // nanoseconds spent working them out
}

// EncoderStats is what a Reranker has done since it was made, for the metrics: the embeddings
// its searches found kept, those it worked out (a card's by a search or by Warm), the time that
// took (summed over the cores), and how many it keeps now.
type EncoderStats struct {
	QueryHits, CardHits     uint64
	QueryEmbeds, CardEmbeds uint64
	Embedding               time.Duration
	QueriesKept, CardsKept  int
}

// Stats returns the Reranker's EncoderStats.
func (r *Reranker) Stats() EncoderStats {
	return EncoderStats{
		QueryHits: r.queryHits.Load(), CardHits: r.cardHits.Load(),
		QueryEmbeds: r.queryEmbeds.Load(), CardEmbeds: r.cardEmbeds.Load(),
		Embedding:   time.Duration(r.embedding.Load()),
		QueriesKept: r.queries.Len(), CardsKept: r.cards.Len(),
	}
}

// tenantText is a query of a tenant: kept per tenant, so that how fast one tenant's search is
// answered says nothing of another's.
type tenantText struct {
	tenant tenants.ID
	text   string
}

// cardVersion names one version of a card.
type cardVersion struct {
	tenant   tenants.ID
	id       string
	revision int64
}

// NewReranker returns a Reranker that keeps the embeddings of up to keepCards card versions
// (about 760 bytes each, packed) and of the 4,096 queries last searched (2 KB each).
func NewReranker(m *semantic.Model, weight float64, depth, keepCards int) (*Reranker, error) {
	queries, err := lru.New[tenantText, []float32](keptQueries)
	if err != nil {
		return nil, err
	}
	keep := max(keepCards, 1)
	kept, err := lru.New[cardVersion, semantic.Packed](keep)
	if err != nil {
		return nil, err
	}
	return &Reranker{Model: m, Weight: weight, Depth: depth, queries: queries, cards: kept,
		turns: make(chan struct{}, runtime.GOMAXPROCS(0)), keep: keep}, nil
}

// MaxRerankDepth bounds Depth: the most matches a Reranker orders again.
const MaxRerankDepth = index.MaxBlock

// keptQueries is how many queries' embeddings a Reranker keeps.
const keptQueries = 4096

// embed works out text's embedding when a turn is free, or fails with ctx.
func (r *Reranker) embed(ctx context.Context, text string) ([]float32, error) {
	select {
	case r.turns <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-r.turns }()
	start := time.Now()
	v := r.Model.Embed(text)
	r.embedding.Add(int64(time.Since(start)))
	return v, nil
}

// queryKey is what the embedding of the tenant's query q is kept under: q lowercased, its
// spaces collapsed (the text the encoder reads).
func queryKey(tenant tenants.ID, q string) tenantText {
	return tenantText{tenant, strings.ToLower(strings.Join(strings.Fields(q), " "))}
}

// query returns the embedding of a query not kept, and keeps it.
func (r *Reranker) query(ctx context.Context, key tenantText) ([]float32, error) {
	v, err := r.embed(ctx, key.text)
	if err == nil {
		r.queryEmbeds.Add(1)
		r.queries.Add(key, v)
	}
	return v, err
}

// card returns the packed embedding of a card version not kept, and keeps it.
func (r *Reranker) card(ctx context.Context, key cardVersion, c cards.Card) (semantic.Packed, error) {
	v, err := r.embed(ctx, cardText(c))
	if err != nil {
		return semantic.Packed{}, err
	}
	p := semantic.Pack(v)
	r.cardEmbeds.Add(1)
	r.cards.Add(key, p)
	return p, nil
}

// Warm works out the embeddings of the tenants' cards that are not kept, one at a time (a
// search's embeddings take the other turns), until as many as the Reranker keeps are worked out
// or ctx ends, and returns how many it worked out. A server's warm start calls it for the
// tenants whose indexes it built, after them, so that their first searches after a restart find
// their cards' embeddings kept.
func (r *Reranker) Warm(ctx context.Context, store cards.Store, list []tenants.ID) (int, error) {
	n, room := 0, r.keep
	for _, tenant := range list {
		ids, err := store.IDs(ctx, tenant)
		if err != nil {
			return n, err
		}
		var failed error
		err = getInBatches(ctx, store, tenant, ids, func(batch []cards.Card) {
			for _, c := range batch {
				key := cardVersion{tenant, c.ID, c.Revision}
				if failed != nil || n >= room || r.cards.Contains(key) {
					continue
				}
				if _, failed = r.card(ctx, key, c); failed == nil {
					n++
				}
			}
		})
		if err = cmp.Or(failed, err); err != nil || n >= room {
			return n, err
		}
	}
	return n, nil
}

// cardText is what of a card the encoder reads, lowercased: its name, description and tags, then
// its capabilities' titles (or names); the encoder reads up to 128 word pieces of it.
func cardText(c cards.Card) string {
	parts := []string{c.Name + ".", c.Description, strings.Join(c.Tags, " ")}
	for _, cp := range c.Capabilities {
		parts = append(parts, cmp.Or(cp.Title, strings.ReplaceAll(cp.Name, "_", " ")))
	}
	return strings.ToLower(strings.Join(strings.Fields(strings.Join(parts, " ")), " "))
}

// order returns the block in the order of its cards' ranks, with each card's Similarity; cards
// not in got (removed since they matched) go last.
func (r *Reranker) order(ctx context.Context, tenant tenants.ID, q string, p *index.Plan, block []index.Candidate,
	got map[string]*rendered) ([]index.Candidate, map[string]index.Similarity, error) {
	sims := make(map[string]index.Similarity, len(block))
	if len(block) == 0 {
		return block, sims, nil
	}
	top, _ := p.Score(block[0])
	// The query's and the cards' embeddings are worked out together, each on a core of its own
	// when there are turns (a block of cards none of which is kept costs depth/cores embeddings
	// of time, not depth).
	vectors := make([]semantic.Packed, len(block))
	var g *errgroup.Group
	gctx := ctx
	work := func(f func() error) { // the first embedding not kept starts the group
		if g == nil {
			g, gctx = errgroup.WithContext(ctx)
		}
		g.Go(f)
	}
	qkey := queryKey(tenant, q)
	qv, ok := r.queries.Get(qkey)
	if ok {
		r.queryHits.Add(1)
	} else {
		work(func() (err error) {
			qv, err = r.query(gctx, qkey)
			return err
		})
	}
	for i, c := range block {
		rc, ok := got[c.AgentID()]
		if !ok {
			continue
		}
		key := cardVersion{tenant, rc.card.ID, rc.card.Revision}
		if vectors[i], ok = r.cards.Get(key); ok {
			r.cardHits.Add(1)
		} else {
			work(func() (err error) {
				vectors[i], err = r.card(gctx, key, rc.card)
				return err
			})
		}
	}
	if g != nil {
		if err := g.Wait(); err != nil {
			return nil, nil, err
		}
	}
	for i, c := range block {
		if _, ok := got[c.AgentID()]; !ok {
			continue
		}
		score, _ := p.Score(c)
		cos := vectors[i].Cosine(qv)
		rank := r.Weight * cos
		if top > 0 {
			rank += score / top
		}
		sims[c.AgentID()] = index.Similarity{Cosine: cos, Weight: r.Weight, Rank: rank}
	}
	out := slices.Clone(block)
	slices.SortStableFunc(out, func(a, b index.Candidate) int {
		sa, oka := sims[a.AgentID()]
		sb, okb := sims[b.AgentID()]
		switch {
		case oka != okb:
			if oka {
				return -1
			}
			return 1
		case sa.Rank > sb.Rank:
			return -1
		case sa.Rank < sb.Rank:
			return 1
		}
		return 0
	})
	return out, sims, nil
}

// reranked finds the page of a q search that starts in the re-ranked block (its first page, or
// one whose cursor is of the block), puts its cards into got and returns it with the plan its
// scores and explanations are read from: the block's first Depth matches are found and ordered
// again (see Reranker); a page that reaches the block's end goes on with the matches after it.
func (s *Service) reranked(ctx context.Context, tenant tenants.ID, q string, p *index.Plan, readable func(string) bool,
	lookup *liveness.Lookup, got map[string]*rendered) (matchPage, index.Plan, error) {
	r := s.Rerank
	bp := p.Paged(r.Depth, nil)
	block, err := s.matches(ctx, tenant, &bp, readable, lookup)
	if err != nil {
		return matchPage{}, bp, err
	}
	if err := s.pageCards(ctx, tenant, block.page, block.cached, got); err != nil {
		return matchPage{}, bp, err
	}
	ordered, sims, err := r.order(ctx, tenant, q, &bp, block.page, got)
	if err != nil {
		return matchPage{}, bp, err
	}
	// A page of the block starts after the card the cursor names, where it still is; else at the
	// cursor's offset.
	offset, after := p.Block()
	if i := slices.IndexFunc(ordered, func(c index.Candidate) bool { return c.AgentID() == after }); i >= 0 {
		offset = i + 1
	}
	from, limit := min(offset, len(ordered)), p.Limit()
	m := matchPage{page: ordered[from:min(from+limit, len(ordered))], total: block.total, similarity: sims}
	switch need := limit - len(m.page); {
	case from+limit < len(ordered):
		m.next = bp.BlockPosition(from+limit, ordered[from+limit-1].AgentID())
	case block.next == nil: // every match is in the block
	case need == 0:
		m.next = block.next
	default:
		// The rest of the page comes after the block, in the plain ranking; a card of the block
		// that a write moved after it meanwhile is not shown twice.
		ap := p.Paged(need, block.next)
		rest, err := s.matches(ctx, tenant, &ap, readable, lookup)
		if err != nil {
			return matchPage{}, bp, err
		}
		page, cached := rest.page[:0:0], rest.cached[:0:0]
		for i, c := range rest.page {
			if !slices.ContainsFunc(block.page, func(b index.Candidate) bool { return b.AgentID() == c.AgentID() }) {
				page = append(page, c)
				if rest.cached != nil {
					cached = append(cached, rest.cached[i])
				}
			}
		}
		if err := s.pageCards(ctx, tenant, page, cached, got); err != nil {
			return matchPage{}, bp, err
		}
		m.page = append(slices.Clip(m.page), page...)
		m.next = rest.next
	}
	return m, bp, nil
}

// errBlockCursor refuses a cursor into a re-ranked block on a server that does not re-rank.
var errBlockCursor = fault.New(fault.Invalid, "cursor: of a re-ranked search, which this server does not do: invalid")
