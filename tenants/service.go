package tenants

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/authz/fault"
)

// Store persists tenants. Create seeds the tenant's built-in roles and grants its admins the admin
// role in the same transaction; Delete removes the tenant and everything it owns in one transaction.
type Store interface {
	Create(ctx context.Context, t Tenant, admins []string) error
	Get(ctx context.Context, id ID) (Tenant, error)
	List(ctx context.Context) ([]Tenant, error)
	Update(ctx context.Context, t Tenant) error
	Delete(ctx context.Context, id ID) error
}

// Service is what the API does with tenants. Only platform admins manage tenants.
type Service struct {
	Store Store
	// Now is the clock; injected so tests can pin it.
	Now func() time.Time
	// Changed is called after a tenant is created or deleted, so caches keyed by tenant (casbin
	// enforcers) drop what they hold for it. May be nil.
	Changed func(ID)
	// CacheTTL is how long the request gates may use a tenant row read by an earlier request;
	// 0 reads it on every request. It bounds how late a suspension or a policy change made on
	// another replica is seen here; changes made through this Service are seen at once.
	CacheTTL time.Duration
	// Ping, when set, pings the database on a connection of its own with a short deadline: the
	// gate finds the database down when it fails, and only then may a read be answered with the
	// tenant row as last read (see Down).
	Ping func(ctx context.Context) error
	// Reconnect, when set, is called when a ping finds the database answering after it was found
	// down, before any request passes the gate on it: the pool drops the connections it held
	// from before the outage, on which the first statements would fail.
	Reconnect func()

	cache rowCache
	// clock is the row cache's clock, time.Now unless a test sets it (export_test.go).
	clock func() time.Time
	// DownMemo is how long a ping that found the database down stands for the next requests
	// before one pings again; 0 means a second. Tests lengthen it.
	DownMemo time.Duration

	// downAt is when a ping found the database down (on the gate's clock, see sinceEpoch), 0
	// once it answers again; probed is when a ping last found it down; pinging is the gate's
	// ping under way, if any (see ping).
	downAt, probed atomic.Int64
	pingMu         sync.Mutex
	pinging        *pingCall
	// watching is set while watch runs, closed once Close was called (both under pingMu); stop
	// is closed by Close.
	watching, closed bool
	stopOnce         sync.Once
	stop             chan struct{}
	// onDown and onAnswer are called when the database is found down, and answers again
	// (OnDown, OnAnswer).
	hooks    sync.Mutex
	onDown   []func(error)
	onAnswer []func()
}

// Input is what a client sends to create a tenant.
type Input struct {
	ID     ID       `json:"id"`
	Name   string   `json:"name"`
	Admins []string `json:"admins"`
}

// Patch is a partial update, read as a JSON merge patch (RFC 7396): nil fields stay as they are.
type Patch struct {
	Name                    *string `json:"name"`
	Status                  *Status `json:"status"`
	RefuseOfflineDelegation *bool   `json:"refuseOfflineDelegation"`
	HideDelegationTasks     *bool   `json:"hideDelegationTasks"`
	// removed lists the members sent as null, which in a merge patch removes a member; a
	// tenant's name and status cannot be removed, so Update refuses them.
	removed []string
}

// UnmarshalJSON reads a patch strictly (an unknown member is an error), noting the nulls.
func (p *Patch) UnmarshalJSON(b []byte) error {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(b, &members); err != nil {
		return err
	}
	type plain Patch
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode((*plain)(p)); err != nil {
		return err
	}
	p.removed = nil
	for _, name := range slices.Sorted(maps.Keys(members)) {
		if string(members[name]) == "null" {
			p.removed = append(p.removed, name)
		}
	}
	return nil
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC().Truncate(time.Microsecond)
	}
	return time.Now().UTC().Truncate(time.Microsecond)
}

func (s *Service) changed(id ID) {
	s.Forget(id)
	if s.Changed != nil {
		s.Changed(id)
	}
}

// Create registers a new active tenant and makes each of in.Admins its admin.
func (s *Service) Create(ctx context.Context, in Input) (Tenant, error) {
	if err := authz.RequirePlatformAdmin(ctx); err != nil {
		return Tenant{}, err
	}
	now := s.now()
	t := Tenant{ID: in.ID, Name: in.Name, Status: StatusActive, CreatedAt: now, UpdatedAt: now}
	if err := t.Validate(); err != nil {
		return Tenant{}, err
	}
	seen := make(map[string]bool, len(in.Admins))
	admins := make([]string, 0, len(in.Admins))
	for i, a := range in.Admins {
		if err := authz.ValidateSubject(a); err != nil {
			return Tenant{}, fault.Errorf(fault.Invalid, "admins[%d]: %s", i, fault.MessageOf(err))
		}
		if !seen[a] {
			seen[a] = true
			admins = append(admins, a)
		}
	}
	if err := s.Store.Create(ctx, t, admins); err != nil {
		return Tenant{}, err
	}
	s.changed(t.ID)
	return t, nil
}

// Get returns one tenant to a platform admin.
func (s *Service) Get(ctx context.Context, id ID) (Tenant, error) {
	if err := authz.RequirePlatformAdmin(ctx); err != nil {
		return Tenant{}, err
	}
	if err := wellFormed(id); err != nil {
		return Tenant{}, err
	}
	return s.Store.Get(ctx, id)
}

// wellFormed answers an id that is not a tenant slug as a missing tenant, without a query: no
// tenant can have it, and the databases differ over ids they cannot store (Postgres refuses a
// NUL or a byte that is not UTF-8 in a query, where the others find nothing).
func wellFormed(id ID) error {
	if ValidateID(id) != nil {
		return fault.Errorf(fault.NotFound, "tenant %q: not found", string(id))
	}
	return nil
}

// List returns every tenant, ordered by id, to a platform admin.
func (s *Service) List(ctx context.Context) ([]Tenant, error) {
	if err := authz.RequirePlatformAdmin(ctx); err != nil {
		return nil, err
	}
	return s.Store.List(ctx)
}

// Update renames, suspends or reactivates a tenant.
func (s *Service) Update(ctx context.Context, id ID, p Patch) (Tenant, error) {
	if err := authz.RequirePlatformAdmin(ctx); err != nil {
		return Tenant{}, err
	}
	if len(p.removed) > 0 {
		return Tenant{}, fault.Errorf(fault.Invalid, "%s: a tenant's %s cannot be removed (null)", p.removed[0], p.removed[0])
	}
	if err := wellFormed(id); err != nil {
		return Tenant{}, err
	}
	t, err := s.Store.Get(ctx, id)
	if err != nil {
		return Tenant{}, err
	}
	if p.Name != nil {
		t.Name = *p.Name
	}
	if p.Status != nil {
		t.Status = *p.Status
	}
	if p.RefuseOfflineDelegation != nil {
		t.RefuseOfflineDelegation = *p.RefuseOfflineDelegation
	}
	if p.HideDelegationTasks != nil {
		t.HideDelegationTasks = *p.HideDelegationTasks
	}
	if err := t.Validate(); err != nil {
		return Tenant{}, err
	}
	t.UpdatedAt = s.now()
	err = s.Store.Update(ctx, t)
	s.Forget(id)
	if err != nil {
		return Tenant{}, err
	}
	return t, nil
}

// Delete removes a tenant with its cards, roles and policies.
func (s *Service) Delete(ctx context.Context, id ID) error {
	if err := authz.RequirePlatformAdmin(ctx); err != nil {
		return err
	}
	if err := wellFormed(id); err != nil {
		return err
	}
	err := s.Store.Delete(ctx, id)
	s.changed(id)
	return err
}

// Enter is the gate of every service entry point scoped to a tenant: the caller in ctx may act
// in the tenant only if it exists, is the caller's (or the caller is a platform admin) and is
// active. The context it returns carries the tenant's policy version as the row says, so every
// check of the call uses rules at least as new as that row, at no extra query, and its synonym
// sets (SynonymsFrom) for the call's searches.
func (s *Service) Enter(ctx context.Context, tenant string) (context.Context, error) {
	t, err := s.Active(ctx, ID(tenant))
	if err != nil {
		return ctx, err
	}
	return withSynonyms(authz.WithPolicyVersion(ctx, tenant, t.PolicyVersion()), t), nil
}

// EnterPublished is the gate of the open A2A entry points: the tenant exists and is active,
// whoever asks (a suspended tenant is missing, so anonymous readers learn nothing). The context
// it returns carries the policy version, for a caller who sent a token.
func (s *Service) EnterPublished(ctx context.Context, tenant string) (context.Context, error) {
	t, err := s.Published(ctx, ID(tenant))
	if err != nil {
		return ctx, err
	}
	return authz.WithPolicyVersion(ctx, tenant, t.PolicyVersion()), nil
}

// Active returns the tenant if it exists, is visible to the caller and is active. A tenant other
// than the caller's answers exactly as a missing one, without a lookup, so neither the body nor
// the timing tells them apart.
func (s *Service) Active(ctx context.Context, id ID) (Tenant, error) {
	p, ok := authz.PrincipalFrom(ctx)
	if !ok {
		return Tenant{}, fault.New(fault.Unauthenticated, "authentication required")
	}
	notFound := fault.Errorf(fault.NotFound, "tenant %q: not found", string(id))
	if ValidateID(id) != nil || (!p.PlatformAdmin && p.Tenant != string(id)) {
		return Tenant{}, notFound
	}
	t, err := s.lookup(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return Tenant{}, notFound
	}
	if err != nil {
		return Tenant{}, err
	}
	if t.Status == StatusSuspended {
		return Tenant{}, fault.Errorf(fault.Suspended, "tenant %q: tenant is suspended", string(id))
	}
	return t, nil
}

// Published returns the tenant if it exists and is active, whoever asks: the gate of the open
// A2A routes. A suspended tenant answers as a missing one, so anonymous readers learn nothing.
func (s *Service) Published(ctx context.Context, id ID) (Tenant, error) {
	notFound := fault.Errorf(fault.NotFound, "tenant %q: not found", string(id))
	if ValidateID(id) != nil {
		return Tenant{}, notFound
	}
	t, err := s.lookup(ctx, id)
	if errors.Is(err, ErrNotFound) || (err == nil && t.Status == StatusSuspended) {
		return Tenant{}, notFound
	}
	return t, err
}
