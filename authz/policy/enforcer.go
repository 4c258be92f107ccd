// Package policy enforces the tenants' rules with casbin: one enforcer per tenant, loaded with
// only that tenant's rules, kept while the tenant's policy version is unchanged.
package policy

import (
	"context"
	_ "embed"
	"fmt"
	"strings"
	"sync"

	"github.com/casbin/casbin/v2"
	"github.com/casbin/casbin/v2/model"
	"github.com/casbin/casbin/v2/persist"
	"github.com/casbin/casbin/v2/util"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/authz/fault"
)

//go:embed model.conf
var modelText string

// NewModel parses the embedded casbin model.
func NewModel() (model.Model, error) {
	return model.NewModelFromString(modelText)
}

// Filter selects one tenant's rules; it is what Enforcers pass to the adapter's LoadFilteredPolicy.
type Filter struct {
	Tenant string
}

// RuleStore is the storage the enforcers need: casbin's filtered adapter to load one tenant,
// context-aware writes that bump the tenant's policy revision in the same transaction, and that
// revision. A cached enforcer is used only while the tenant's revision (as the request's tenant
// gate read it) is the one it was loaded at, and a write on this replica drops it at once: a
// revoked grant is not honoured here after the write, nor on another replica once that one has
// read the tenant row again (server.tenantCacheTtl).
type RuleStore interface {
	persist.FilteredAdapter
	// AddRules stores the rules that are not stored yet and reports how many were new; when
	// some were, each guard checks the rules the change leaves, in its transaction.
	AddRules(ctx context.Context, tenant string, rules []authz.Rule, guards ...Guard) (int, error)
	// RemoveRules deletes the given rules and reports how many existed; when some did, each
	// guard checks the rules the change leaves, in its transaction.
	RemoveRules(ctx context.Context, tenant string, rules []authz.Rule, guards ...Guard) (int, error)
	// PolicyVersion returns the tenant's current policy version.
	PolicyVersion(ctx context.Context, tenant string) (authz.PolicyVersion, error)
}

// Gate admits the caller in ctx into a tenant (it exists, is the caller's, is active) and returns
// the context that carries the tenant's policy version; tenants.Service is the one gate.
type Gate interface {
	Enter(ctx context.Context, tenant string) (context.Context, error)
}

// Enforcers keeps one casbin enforcer per tenant, loaded lazily with only that tenant's rules, so
// one tenant's policy count never slows another's. Its entry points for managing roles and
// policies (Roles, Grant, Revoke, Policies, AddPolicy, RemovePolicy, Authorize) pass the tenant
// gate first; Check and ReadFilter serve other services, which have passed it already.
type Enforcers struct {
	store RuleStore
	gate  Gate
	// Changed, if set, is told of every tenant whose rules this replica changed (after the
	// enforcer is dropped), so that caches of the tenant row forget its policy revision too.
	// Set it before the first use.
	Changed func(tenant string)
	// Refused, if set, is told of every check that refused its caller (the audit trail records
	// the refused writes). Set it before the first use.
	Refused func(ctx context.Context, tenant, obj, act string)

	mu       sync.Mutex
	byTenant map[string]cachedEnforcer
	// gen counts invalidations per tenant. A load that raced with an invalidation must not be
	// cached, or it would keep honouring what was just revoked.
	gen map[string]uint64
}

// cachedEnforcer is an enforcer with the policy version it was loaded at (or later: the version
// is read before the rules), and the decisions it made. The decisions live and die with the
// enforcer, which is replaced as soon as the tenant's rules change, so a cached allow can never
// outlive the grant behind it (unlike casbin's CachedEnforcer, whose cache outlives changes).
type cachedEnforcer struct {
	enf       *casbin.SyncedEnforcer
	version   authz.PolicyVersion
	decisions *decisions
	cards     *cardShape
}

// cardShape says, per action, whether the loaded policy decides it alike for every card: when
// each rule about the action names "cards/*" or an object no card's can match (a name with no
// glob character, outside "cards/"), a card's object takes no part in the matcher's outcome
// (its other terms are the subject, its roles, the tenant and the action), and one decision,
// casbin's for the first card asked about, answers for every card. A batch of new cards then
// costs one evaluation instead of one a card, and ReadFilter one for a whole search. Computed
// once per loaded policy and action (a loaded enforcer's rules never change: a change loads
// another).
type cardShape struct {
	mu      sync.RWMutex
	uniform map[string]bool
}

func (s *cardShape) get(enf *casbin.SyncedEnforcer, act string) (bool, error) {
	s.mu.RLock()
	u, ok := s.uniform[act]
	s.mu.RUnlock()
	if ok {
		return u, nil
	}
	rules, err := enf.GetFilteredPolicy(3, act)
	if err != nil {
		return false, err
	}
	u = true
	for _, rule := range rules {
		if len(rule) < 3 || !cardBlind(rule[2]) {
			u = false
			break
		}
	}
	s.mu.Lock()
	if s.uniform == nil {
		s.uniform = map[string]bool{}
	}
	s.uniform[act] = u
	s.mu.Unlock()
	return u, nil
}

// cardBlind reports whether the object pattern of a rule matches every card's object alike:
// "cards/*" matches all of them (globMatch's "*" takes one whole path segment, and an agent id is
// one); a pattern whose first segment is a plain name other than "cards" matches none. Anything
// else ("cards/a*", "cards/x", "*/*", "**", ...) may tell cards apart.
func cardBlind(pattern string) bool {
	first, _, _ := strings.Cut(pattern, "/")
	return pattern == authz.ObjAllCards || (first != "cards" && !strings.ContainsAny(first, "*?[]{}\\"))
}

// cardsPrefix begins the object of every card (authz.CardObject).
const cardsPrefix = "cards/"

// cardObject reports whether obj is a card's object, "cards/" and one non-empty segment, which
// "cards/*" matches.
func cardObject(obj string) bool {
	id, ok := strings.CutPrefix(obj, cardsPrefix)
	return ok && id != "" && !strings.Contains(id, "/")
}

// maxDecisions bounds the decisions remembered per tenant; past it, checks are evaluated anew.
const maxDecisions = 10000

type decisionKey struct{ sub, obj, act string }

// decisions memoises Enforce: with hundreds of policies, evaluating the matcher over each costs
// far more than a map lookup.
type decisions struct {
	mu sync.RWMutex
	m  map[decisionKey]bool
}

func (d *decisions) get(k decisionKey) (allowed, ok bool) {
	d.mu.RLock()
	allowed, ok = d.m[k]
	d.mu.RUnlock()
	return allowed, ok
}

func (d *decisions) put(k decisionKey, allowed bool) {
	d.mu.Lock()
	if len(d.m) < maxDecisions {
		d.m[k] = allowed
	}
	d.mu.Unlock()
}

// NewEnforcers returns an empty cache over store, whose management entry points admit callers
// through gate.
func NewEnforcers(store RuleStore, gate Gate) *Enforcers {
	return &Enforcers{store: store, gate: gate, byTenant: map[string]cachedEnforcer{}, gen: map[string]uint64{}}
}

// enter admits the caller in ctx (a delegation token opens none of the management entry points)
// into tenant.
func (e *Enforcers) enter(ctx context.Context, tenant string) (context.Context, error) {
	if _, err := authz.Caller(ctx); err != nil {
		return ctx, err
	}
	return e.gate.Enter(ctx, tenant)
}

// Invalidate drops the tenant's enforcer; the next check reloads it from the store.
func (e *Enforcers) Invalidate(tenant string) {
	e.mu.Lock()
	delete(e.byTenant, tenant)
	e.gen[tenant]++
	e.mu.Unlock()
	if e.Changed != nil {
		e.Changed(tenant)
	}
}

// version is the policy version a check in ctx must see at least: the one the tenant gate read
// with the tenant row, or else the store's current one.
func (e *Enforcers) version(ctx context.Context, tenant string) (authz.PolicyVersion, error) {
	if v, ok := authz.PolicyVersionFrom(ctx, tenant); ok {
		return v, nil
	}
	return e.store.PolicyVersion(ctx, tenant)
}

func (e *Enforcers) get(ctx context.Context, tenant string) (*casbin.SyncedEnforcer, error) {
	c, err := e.cached(ctx, tenant)
	return c.enf, err
}

func (e *Enforcers) cached(ctx context.Context, tenant string) (cachedEnforcer, error) {
	want, err := e.version(ctx, tenant)
	if err != nil {
		return cachedEnforcer{}, err
	}
	e.mu.Lock()
	if c, ok := e.byTenant[tenant]; ok && c.version.Covers(want) {
		e.mu.Unlock()
		return c, nil
	}
	gen := e.gen[tenant]
	e.mu.Unlock()

	m, err := NewModel()
	if err != nil {
		return cachedEnforcer{}, err
	}
	enf, err := casbin.NewSyncedEnforcer(m)
	if err != nil {
		return cachedEnforcer{}, err
	}
	enf.SetAdapter(e.store)
	// The rules are read after want was: they are at least as new as want.
	if err := enf.LoadFilteredPolicy(Filter{Tenant: tenant}); err != nil {
		return cachedEnforcer{}, fmt.Errorf("load policy of tenant %q: %w", tenant, err)
	}
	loaded := cachedEnforcer{enf: enf, version: want, decisions: &decisions{m: map[decisionKey]bool{}}, cards: &cardShape{}}

	e.mu.Lock()
	defer e.mu.Unlock()
	if c, ok := e.byTenant[tenant]; ok && c.version.Covers(want) {
		return c, nil
	}
	if e.gen[tenant] == gen {
		e.byTenant[tenant] = loaded
	}
	return loaded, nil
}

// enforce reports whether subject may perform act on obj in tenant, with rules at least as new
// as the policy version in ctx (or the store's current one).
func (e *Enforcers) enforce(ctx context.Context, tenant, subject, obj, act string) (bool, error) {
	c, err := e.cached(ctx, tenant)
	if err != nil {
		return false, err
	}
	k := decisionKey{sub: subject, obj: obj, act: act}
	if cardObject(obj) {
		uniform, err := c.cards.get(c.enf, act)
		if err != nil {
			return false, err
		}
		if uniform {
			k.obj = authz.ObjAllCards // one decision for every card (cardShape)
		}
	}
	if allowed, ok := c.decisions.get(k); ok {
		return allowed, nil
	}
	allowed, err := c.enf.Enforce(subject, tenant, obj, act)
	if err != nil {
		return false, err
	}
	c.decisions.put(k, allowed)
	return allowed, nil
}

// Check fails with authz.ErrForbidden unless the caller in ctx may perform act on obj in tenant.
// Platform admins may do everything.
func (e *Enforcers) Check(ctx context.Context, tenant, obj, act string) error {
	p, ok := authz.PrincipalFrom(ctx)
	if !ok {
		return fault.New(fault.Unauthenticated, "authentication required")
	}
	if p.PlatformAdmin {
		return nil
	}
	allowed, err := e.enforce(ctx, tenant, p.Subject, obj, act)
	if err != nil {
		return err
	}
	if !allowed {
		if e.Refused != nil {
			e.Refused(ctx, tenant, obj, act)
		}
		return fault.Errorf(fault.Forbidden, "%s on %s: forbidden", act, obj)
	}
	return nil
}

// ReadFilter says which of the tenant's cards the caller may read: nil means all of them. When
// the rules about cards:read decide alike for every card (cardShape), the answer is decided once;
// otherwise each card is checked, against one snapshot of the policy.
func (e *Enforcers) ReadFilter(ctx context.Context, tenant string) (func(agentID string) bool, error) {
	p, ok := authz.PrincipalFrom(ctx)
	if !ok {
		return nil, fault.New(fault.Unauthenticated, "authentication required")
	}
	if p.PlatformAdmin {
		return nil, nil
	}
	c, err := e.cached(ctx, tenant)
	if err != nil {
		return nil, err
	}
	uniform, err := c.cards.get(c.enf, authz.ActCardsRead)
	if err != nil {
		return nil, err
	}
	if !uniform {
		return readPredicate(c.enf, tenant, p.Subject)
	}
	check := func(agentID string) bool {
		ok, err := e.enforce(ctx, tenant, p.Subject, authz.CardObject(agentID), authz.ActCardsRead)
		return err == nil && ok
	}
	if check("any") {
		return nil, nil
	}
	return func(string) bool { return false }, nil
}

// readPredicate answers cards:read for every card of a search the way the model does (allow if
// some rule of the subject or one of its roles allows, and none denies; objects by globMatch),
// but from the few rules that concern the subject, gathered once: a casbin evaluation per card
// would cost milliseconds per card in a tenant with many policies.
func readPredicate(enf *casbin.SyncedEnforcer, tenant, subject string) (func(string) bool, error) {
	roles, err := enf.GetImplicitRolesForUser(subject, tenant)
	if err != nil {
		return nil, err
	}
	var allows, denies []string
	for _, sub := range append([]string{subject}, roles...) {
		rules, err := enf.GetFilteredPolicy(0, sub, tenant, "", authz.ActCardsRead)
		if err != nil {
			return nil, err
		}
		for _, r := range rules {
			switch r[4] {
			case authz.Allow:
				allows = append(allows, r[2])
			case authz.Deny:
				denies = append(denies, r[2])
			}
		}
	}
	match := func(obj string, patterns []string) bool {
		for _, pat := range patterns {
			if ok, err := util.GlobMatch(obj, pat); err == nil && ok {
				return true
			}
		}
		return false
	}
	return func(agentID string) bool {
		obj := authz.CardObject(agentID)
		return !match(obj, denies) && match(obj, allows)
	}, nil
}
