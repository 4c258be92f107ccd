package webhooks

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"slices"
	"time"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/cards/search"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/tenants/paging"
)

// Store keeps the subscriptions and their delivery records; storage's WebhookStore is one.
type Store interface {
	// Create stores w, following the feed from cursor; a conflict when the tenant has max
	// subscriptions already.
	Create(ctx context.Context, tenant tenants.ID, w Webhook, cursor string, max int) (Webhook, error)
	// List answers the tenant's subscriptions, oldest first.
	List(ctx context.Context, tenant tenants.ID) ([]Webhook, error)
	// Get answers one subscription; not found when the tenant has none of that id.
	Get(ctx context.Context, tenant tenants.ID, id string) (Webhook, error)
	// Update applies p to the subscription and answers it as stored.
	Update(ctx context.Context, tenant tenants.ID, id string, p Patch) (Webhook, error)
	// Remove removes the subscription and its delivery records.
	Remove(ctx context.Context, tenant tenants.ID, id string) error
	// Deliveries answers the subscription's delivery records, newest first, at most limit.
	Deliveries(ctx context.Context, tenant tenants.ID, id string, limit int) ([]Delivery, error)
}

// Patch is a change of a subscription; nil members stay as they are.
type Patch struct {
	URL      *string
	Types    *[]string
	AgentIDs *[]string
	// State, when set to active on a subscription that is not, also clears its failures and
	// makes its next attempt due at At.
	State *string
	At    time.Time
}

// Gate admits the caller in ctx into a tenant; tenants.Service is the one gate.
type Gate interface {
	Enter(ctx context.Context, tenant string) (context.Context, error)
}

// Checker answers whether the caller in ctx may act on an object of a tenant, and records a
// refused write (policy.Enforcers).
type Checker interface {
	Check(ctx context.Context, tenant, obj, act string) error
}

// Feed reads the change feed as the service's own follower; search.Changes is it.
type Feed interface {
	Follow(ctx context.Context, tenant tenants.ID, since string, limit int) (search.FeedPage, error)
}

// Service is what the API does with a tenant's subscriptions: create, list, read, change and
// remove them, and read their delivery records. Every call needs webhooks:manage on webhooks: a
// subscriber receives every change its filter matches, whatever its creator may read.
type Service struct {
	Store Store
	Gate  Gate
	Authz Checker
	Feed  Feed
	// Refused says which literal addresses the outbound guard refuses (ValidateURL).
	Refused RefusedAddress
	Config  Config
	// Wake, when set, is told of a subscription created or resumed, so that delivery need not
	// wait for the next poll.
	Wake func()
	Now  func() time.Time
}

// MaxDeliveries bounds the delivery records one read answers.
const MaxDeliveries = 1000

// Create validates and stores a new subscription, which receives the changes committed after
// it is created.
func (s *Service) Create(ctx context.Context, tenant tenants.ID, w Webhook) (Webhook, error) {
	ctx, err := s.enter(ctx, tenant)
	if err != nil {
		return Webhook{}, err
	}
	if err := s.validate(w.URL, Filter{Types: w.Types, AgentIDs: w.AgentIDs}); err != nil {
		return Webhook{}, err
	}
	// The feed's present: the subscription receives what commits from now on.
	present, err := s.Feed.Follow(ctx, tenant, "", 1)
	if err != nil {
		return Webhook{}, err
	}
	var id [8]byte
	_, _ = crand.Read(id[:])
	now := s.now()
	w = Webhook{ID: "wh_" + hex.EncodeToString(id[:]), URL: w.URL, Types: orEmpty(w.Types), AgentIDs: orEmpty(w.AgentIDs),
		State: StateActive, NextAttemptAt: now, CreatedAt: now, UpdatedAt: now}
	stored, err := s.Store.Create(ctx, tenant, w, present.NextCursor, s.Config.WithDefaults().MaxPerTenant)
	if err != nil {
		return Webhook{}, err
	}
	s.wake()
	return stored, nil
}

// List answers the tenant's subscriptions, oldest first.
func (s *Service) List(ctx context.Context, tenant tenants.ID) ([]Webhook, error) {
	ctx, err := s.enter(ctx, tenant)
	if err != nil {
		return nil, err
	}
	return s.Store.List(ctx, tenant)
}

// Get answers one subscription.
func (s *Service) Get(ctx context.Context, tenant tenants.ID, id string) (Webhook, error) {
	ctx, err := s.enter(ctx, tenant)
	if err != nil {
		return Webhook{}, err
	}
	if err := ValidateID(id); err != nil {
		return Webhook{}, err
	}
	return s.Store.Get(ctx, tenant, id)
}

// Update changes what p sets of a subscription: its URL, its filter, or its state (active or
// disabled). Setting a disabled or failing subscription active clears its failures and retries
// it at once, from where delivery stopped.
func (s *Service) Update(ctx context.Context, tenant tenants.ID, id string, p Patch) (Webhook, error) {
	ctx, err := s.enter(ctx, tenant)
	if err != nil {
		return Webhook{}, err
	}
	if err := ValidateID(id); err != nil {
		return Webhook{}, err
	}
	cur, err := s.Store.Get(ctx, tenant, id)
	if err != nil {
		return Webhook{}, err
	}
	u, f := cur.URL, Filter{Types: cur.Types, AgentIDs: cur.AgentIDs}
	if p.URL != nil {
		u = *p.URL
	}
	if p.Types != nil {
		*p.Types = orEmpty(*p.Types)
		f.Types = *p.Types
	}
	if p.AgentIDs != nil {
		*p.AgentIDs = orEmpty(*p.AgentIDs)
		f.AgentIDs = *p.AgentIDs
	}
	if err := s.validate(u, f); err != nil {
		return Webhook{}, err
	}
	if p.State != nil {
		if err := ValidateState(*p.State); err != nil {
			return Webhook{}, err
		}
	}
	p.At = s.now()
	w, err := s.Store.Update(ctx, tenant, id, p)
	if err != nil {
		return Webhook{}, err
	}
	if w.State == StateActive {
		s.wake()
	}
	return w, nil
}

// Remove removes a subscription and its delivery records. A delivery in flight may still
// arrive.
func (s *Service) Remove(ctx context.Context, tenant tenants.ID, id string) error {
	ctx, err := s.enter(ctx, tenant)
	if err != nil {
		return err
	}
	if err := ValidateID(id); err != nil {
		return err
	}
	return s.Store.Remove(ctx, tenant, id)
}

// Deliveries answers a subscription's delivery records, newest first, at most the page's limit
// (all that are kept by default).
func (s *Service) Deliveries(ctx context.Context, tenant tenants.ID, id string, page paging.Page) ([]Delivery, error) {
	ctx, err := s.enter(ctx, tenant)
	if err != nil {
		return nil, err
	}
	if err := ValidateID(id); err != nil {
		return nil, err
	}
	limit, err := page.Check(MaxDeliveries, MaxDeliveries)
	if err != nil {
		return nil, err
	}
	if _, err := s.Store.Get(ctx, tenant, id); err != nil {
		return nil, err
	}
	return s.Store.Deliveries(ctx, tenant, id, limit)
}

func (s *Service) validate(u string, f Filter) error {
	if err := ValidateURL(u, s.Refused); err != nil {
		return err
	}
	return f.Validate()
}

// enter lets an authenticated caller into the tenant through the gate and checks that it may
// manage the tenant's webhooks; a refused write is recorded by the checker.
func (s *Service) enter(ctx context.Context, tenant tenants.ID) (context.Context, error) {
	if _, err := authz.Caller(ctx); err != nil {
		return nil, err
	}
	ctx, err := s.Gate.Enter(ctx, string(tenant))
	if err != nil {
		return nil, err
	}
	if err := s.Authz.Check(ctx, string(tenant), authz.ObjWebhooks, authz.ActWebhooksManage); err != nil {
		return nil, err
	}
	return ctx, nil
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Service) wake() {
	if s.Wake != nil {
		s.Wake()
	}
}

// orEmpty is l, or an empty list for nil, so that answers say [] rather than null.
func orEmpty(l []string) []string {
	if l == nil {
		return []string{}
	}
	return slices.Clone(l)
}
