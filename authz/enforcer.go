package authz

import (
	"context"
	_ "embed"
	"fmt"
	"sync"

	"github.com/casbin/casbin/v2"
	"github.com/casbin/casbin/v2/model"
	"github.com/casbin/casbin/v2/persist"
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
// revision. A cached enforcer is used only while the tenant's revision is the one it was loaded
// at, so a revoked grant is never honoured from a stale copy, on this replica or any other.
type RuleStore interface {
	persist.FilteredAdapter
	// AddRules stores the rules that are not stored yet and reports how many were new.
	AddRules(ctx context.Context, tenant string, rules []Rule) (int, error)
	// RemoveRules deletes the given rules and reports how many existed.
	RemoveRules(ctx context.Context, tenant string, rules []Rule) (int, error)
	// PolicyVersion returns the tenant's current policy version.
	PolicyVersion(ctx context.Context, tenant string) (PolicyVersion, error)
}

// Enforcers keeps one casbin enforcer per tenant, loaded lazily with only that tenant's rules, so
// one tenant's policy count never slows another's.
type Enforcers struct {
	store RuleStore

	mu       sync.Mutex
	byTenant map[string]cachedEnforcer
	// gen counts invalidations per tenant. A load that raced with an invalidation must not be
	// cached, or it would keep honouring what was just revoked.
	gen map[string]uint64
}

// cachedEnforcer is an enforcer with the policy version it was loaded at (or later: the version
// is read before the rules).
type cachedEnforcer struct {
	enf     *casbin.SyncedEnforcer
	version PolicyVersion
}

// NewEnforcers returns an empty cache over store.
func NewEnforcers(store RuleStore) *Enforcers {
	return &Enforcers{store: store, byTenant: map[string]cachedEnforcer{}, gen: map[string]uint64{}}
}

// Invalidate drops the tenant's enforcer; the next check reloads it from the store.
func (e *Enforcers) Invalidate(tenant string) {
	e.mu.Lock()
	delete(e.byTenant, tenant)
	e.gen[tenant]++
	e.mu.Unlock()
}

// version is the policy version a check in ctx must see at least: the one the tenant gate read
// with the tenant row, or else the store's current one.
func (e *Enforcers) version(ctx context.Context, tenant string) (PolicyVersion, error) {
	if v, ok := policyVersionFrom(ctx, tenant); ok {
		return v, nil
	}
	return e.store.PolicyVersion(ctx, tenant)
}

func (e *Enforcers) get(ctx context.Context, tenant string) (*casbin.SyncedEnforcer, error) {
	want, err := e.version(ctx, tenant)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	if c, ok := e.byTenant[tenant]; ok && c.version.covers(want) {
		e.mu.Unlock()
		return c.enf, nil
	}
	gen := e.gen[tenant]
	e.mu.Unlock()

	m, err := NewModel()
	if err != nil {
		return nil, err
	}
	enf, err := casbin.NewSyncedEnforcer(m)
	if err != nil {
		return nil, err
	}
	enf.SetAdapter(e.store)
	// The rules are read after want was: they are at least as new as want.
	if err := enf.LoadFilteredPolicy(Filter{Tenant: tenant}); err != nil {
		return nil, fmt.Errorf("load policy of tenant %q: %w", tenant, err)
	}

	e.mu.Lock()
	defer e.mu.Unlock()
	if c, ok := e.byTenant[tenant]; ok && c.version.covers(want) {
		return c.enf, nil
	}
	if e.gen[tenant] == gen {
		e.byTenant[tenant] = cachedEnforcer{enf: enf, version: want}
	}
	return enf, nil
}

// Enforce reports whether subject may perform act on obj in tenant, at the tenant's current
// policy version.
func (e *Enforcers) Enforce(tenant, subject, obj, act string) (bool, error) {
	return e.enforce(context.Background(), tenant, subject, obj, act)
}

func (e *Enforcers) enforce(ctx context.Context, tenant, subject, obj, act string) (bool, error) {
	enf, err := e.get(ctx, tenant)
	if err != nil {
		return false, err
	}
	return enf.Enforce(subject, tenant, obj, act)
}

// Check fails with ErrForbidden unless the caller in ctx may perform act on obj in tenant.
// Platform admins may do everything.
func (e *Enforcers) Check(ctx context.Context, tenant, obj, act string) error {
	p, ok := PrincipalFrom(ctx)
	if !ok {
		return ErrUnauthenticated
	}
	if p.PlatformAdmin {
		return nil
	}
	allowed, err := e.enforce(ctx, tenant, p.Subject, obj, act)
	if err != nil {
		return err
	}
	if !allowed {
		return fmt.Errorf("%s on %s: %w", act, obj, ErrForbidden)
	}
	return nil
}

// Assignment gives a subject a role in a tenant.
type Assignment struct {
	Subject string `json:"subject"`
	Role    string `json:"role"`
}

// Validate checks both fields.
func (a Assignment) Validate() error {
	if err := ValidateSubject(a.Subject); err != nil {
		return err
	}
	return ValidateRole(a.Role)
}

// Roles lists the tenant's role assignments; only those allowed to manage policies may.
func (e *Enforcers) Roles(ctx context.Context, tenant string) ([]Assignment, error) {
	if err := e.Check(ctx, tenant, ObjPolicies, ActPoliciesManage); err != nil {
		return nil, err
	}
	enf, err := e.get(ctx, tenant)
	if err != nil {
		return nil, err
	}
	rows, err := enf.GetFilteredGroupingPolicy(2, tenant)
	if err != nil {
		return nil, err
	}
	out := make([]Assignment, 0, len(rows))
	for _, r := range rows {
		if len(r) < 2 || len(r[1]) <= len(rolePrefix) {
			continue
		}
		out = append(out, Assignment{Subject: r[0], Role: r[1][len(rolePrefix):]})
	}
	return out, nil
}

// Grant assigns a role. It reports false when the assignment already existed.
func (e *Enforcers) Grant(ctx context.Context, tenant string, a Assignment) (bool, error) {
	if err := e.Check(ctx, tenant, ObjPolicies, ActPoliciesManage); err != nil {
		return false, err
	}
	if err := a.Validate(); err != nil {
		return false, err
	}
	n, err := e.store.AddRules(ctx, tenant, []Rule{groupingRule(tenant, a.Subject, a.Role)})
	if err != nil {
		return false, err
	}
	if n == 0 {
		return false, nil
	}
	e.Invalidate(tenant)
	return true, nil
}

// Revoke removes a role assignment; it takes effect on the next request.
func (e *Enforcers) Revoke(ctx context.Context, tenant string, a Assignment) error {
	if err := e.Check(ctx, tenant, ObjPolicies, ActPoliciesManage); err != nil {
		return err
	}
	if err := a.Validate(); err != nil {
		return err
	}
	n, err := e.store.RemoveRules(ctx, tenant, []Rule{groupingRule(tenant, a.Subject, a.Role)})
	e.Invalidate(tenant)
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("role %q of %q: %w", a.Role, a.Subject, ErrNotFound)
	}
	return nil
}
