package a2a

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/liveness"
	"github.com/agentcards/agentcards/tenants"
)

// RefreshStore is what scheduled refreshes need of the database: the cards, and a lease on each
// card's next refresh so that one replica does it.
type RefreshStore interface {
	Candidates(ctx context.Context) ([]liveness.Candidate, error)
	ClaimRefresh(ctx context.Context, owner string, tenant tenants.ID, cs []liveness.Candidate, now, until time.Time) ([]string, error)
}

// Refresher refreshes the cards imported from a URL on a schedule (a2a.refreshInterval): each
// round, the cards whose last refresh (or import) is an interval old are claimed and refreshed
// as POST .../refresh would, on behalf of the server.
type Refresher struct {
	interval time.Duration
	svc      *Service
	store    RefreshStore
	cards    liveness.CardReader
	now      func() time.Time
	replica  string

	mu      sync.Mutex
	rounds  int
	sources map[sourceKey]sourced // by card, as of its revision
}

type sourceKey struct {
	tenant  tenants.ID
	agentID string
}

type sourced struct {
	cardID   string
	revision int64
	last     time.Time // the last refresh, or the import; zero: no source to refresh from
}

// NewRefresher returns a refresher of svc's cards every interval; now may be nil.
func NewRefresher(interval time.Duration, svc *Service, store RefreshStore, cs liveness.CardReader, now func() time.Time) *Refresher {
	if now == nil {
		now = time.Now
	}
	var id [6]byte
	_, _ = crand.Read(id[:])
	return &Refresher{interval: interval, svc: svc, store: store, cards: cs, now: now,
		replica: hex.EncodeToString(id[:]), sources: map[sourceKey]sourced{}}
}

// refresher is the principal scheduled refreshes act as: the server itself, in the job
// namespace no user subject can take.
var refresher = authz.Principal{Subject: authz.JobPrefix + "refresh", PlatformAdmin: true}

// RefreshStats count what a round did.
type RefreshStats struct {
	Claimed, Updated, Unchanged, Refused, Failed int
}

// Run refreshes every interval until ctx ends; a failed round is given to failed.
func (r *Refresher) Run(ctx context.Context, failed func(error)) {
	tick := time.NewTicker(r.interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if _, err := r.Round(ctx); err != nil && ctx.Err() == nil && failed != nil {
			failed(err)
		}
	}
}

// Round claims the cards due and refreshes them, a few at a time.
func (r *Refresher) Round(ctx context.Context) (RefreshStats, error) {
	cands, err := r.store.Candidates(ctx)
	if err != nil {
		return RefreshStats{}, fmt.Errorf("refresh: list cards: %w", err)
	}
	now := r.now().UTC()
	due, err := r.due(ctx, cands, now)
	if err != nil {
		return RefreshStats{}, err
	}
	r.mu.Lock()
	r.rounds++
	owner := fmt.Sprintf("%s/%d", r.replica, r.rounds)
	r.mu.Unlock()
	until := now.Add(r.interval - r.interval/10)
	type job struct {
		tenant  tenants.ID
		agentID string
	}
	var jobs []job
	for tenant, cs := range due {
		for start := 0; start < len(cs); start += 500 {
			chunk := cs[start:min(len(cs), start+500)]
			got, err := r.store.ClaimRefresh(ctx, owner, tenant, chunk, now, until)
			if err != nil {
				return RefreshStats{}, fmt.Errorf("refresh: claim: %w", err)
			}
			for _, id := range got {
				jobs = append(jobs, job{tenant, id})
			}
		}
	}
	stats := RefreshStats{}
	var mu sync.Mutex
	sem := make(chan struct{}, refreshConcurrency)
	var wg sync.WaitGroup
	// A refresh once begun runs to its end; none begins once ctx ends (the server stopping) or
	// the lease has run out (another replica may hold it by then).
	sys := authz.AsJob(authz.WithPrincipal(context.WithoutCancel(ctx), refresher), "refresh", "cards.refresh")
	lease := until.Sub(now)
	began := time.Now()
	for _, j := range jobs {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil || time.Since(began) >= lease {
			if ctx.Err() == nil {
				<-sem
			}
			break
		}
		stats.Claimed++
		wg.Go(func() {
			defer func() { <-sem }()
			res, err := r.svc.Refresh(sys, j.tenant, j.agentID, nil)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				stats.Failed++
			case res.Outcome == cards.RefreshUpdated:
				stats.Updated++
			case res.Outcome == cards.RefreshUnchanged:
				stats.Unchanged++
			default:
				stats.Refused++
			}
		})
	}
	wg.Wait()
	return stats, nil
}

// refreshConcurrency bounds the refreshes in flight on a replica.
const refreshConcurrency = 4

// due returns, by tenant and in agentId order, the cards with a source whose last refresh is an
// interval old, reading the documents of cards new or changed since the last round.
func (r *Refresher) due(ctx context.Context, cands []liveness.Candidate, now time.Time) (map[tenants.ID][]liveness.Candidate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	stale := map[tenants.ID][]string{}
	seen := make(map[sourceKey]bool, len(cands))
	for _, c := range cands {
		k := sourceKey{c.Tenant, c.AgentID}
		seen[k] = true
		if s, ok := r.sources[k]; !ok || s.cardID != c.CardID || s.revision != c.Revision {
			stale[c.Tenant] = append(stale[c.Tenant], c.AgentID)
		}
	}
	for k := range r.sources {
		if !seen[k] {
			delete(r.sources, k)
		}
	}
	for tenant, ids := range stale {
		for start := 0; start < len(ids); start += 500 {
			cs, err := r.cards.GetMany(ctx, tenant, ids[start:min(len(ids), start+500)])
			if err != nil {
				return nil, fmt.Errorf("refresh: read cards: %w", err)
			}
			for _, c := range cs {
				s := sourced{cardID: c.ID, revision: c.Revision}
				if c.Source != nil && c.Source.URL != "" {
					s.last = c.CreatedAt
					if c.Source.RefreshedAt != nil {
						s.last = *c.Source.RefreshedAt
					}
				}
				r.sources[sourceKey{tenant, c.AgentID}] = s
			}
		}
	}
	out := map[tenants.ID][]liveness.Candidate{}
	for _, c := range cands {
		s, ok := r.sources[sourceKey{c.Tenant, c.AgentID}]
		if ok && !s.last.IsZero() && s.cardID == c.CardID && !s.last.Add(r.interval).After(now) {
			out[c.Tenant] = append(out[c.Tenant], c)
		}
	}
	for _, cs := range out {
		slices.SortFunc(cs, func(a, b liveness.Candidate) int { return strings.Compare(a.AgentID, b.AgentID) })
	}
	return out, nil
}
