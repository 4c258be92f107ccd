package policy

import (
	"context"
	"fmt"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/authz/fault"
)

// Policies lists the tenant's policies, the built-in roles' included, in the order they were added.
func (e *Enforcers) Policies(ctx context.Context, tenant string) ([]authz.Policy, error) {
	ctx, err := e.enter(ctx, tenant)
	if err != nil {
		return nil, err
	}
	if err := e.Check(ctx, tenant, authz.ObjPolicies, authz.ActPoliciesManage); err != nil {
		return nil, err
	}
	enf, err := e.get(ctx, tenant)
	if err != nil {
		return nil, err
	}
	rows, err := enf.GetFilteredPolicy(1, tenant)
	if err != nil {
		return nil, err
	}
	out := make([]authz.Policy, 0, len(rows))
	for _, r := range rows {
		if p, ok := authz.PolicyOfRule(r); ok {
			out = append(out, p)
		}
	}
	return out, nil
}

// AddPolicy stores a policy. It reports false when the policy already existed.
func (e *Enforcers) AddPolicy(ctx context.Context, tenant string, p authz.Policy) (bool, error) {
	ctx, err := e.enter(ctx, tenant)
	if err != nil {
		return false, err
	}
	if err := e.Check(ctx, tenant, authz.ObjPolicies, authz.ActPoliciesManage); err != nil {
		return false, err
	}
	if err := p.Validate(); err != nil {
		return false, err
	}
	n, err := e.store.AddRules(ctx, tenant, []authz.Rule{p.Rule(tenant)})
	if err != nil {
		return false, err
	}
	e.Invalidate(tenant)
	return n > 0, nil
}

// RemovePolicy deletes a policy; it takes effect on the next request on this replica, and on
// another once its tenant row is re-read (server.tenantCacheTtl).
func (e *Enforcers) RemovePolicy(ctx context.Context, tenant string, p authz.Policy) error {
	ctx, err := e.enter(ctx, tenant)
	if err != nil {
		return err
	}
	if err := e.Check(ctx, tenant, authz.ObjPolicies, authz.ActPoliciesManage); err != nil {
		return err
	}
	if err := p.Validate(); err != nil {
		return err
	}
	n, err := e.store.RemoveRules(ctx, tenant, []authz.Rule{p.Rule(tenant)})
	e.Invalidate(tenant)
	if err != nil {
		return err
	}
	if n == 0 {
		return fault.Errorf(fault.NotFound, "policy (subject %q, object %q, action %q, effect %q): not found", p.Subject, p.Object, p.Action, p.Effect)
	}
	return nil
}

// Authorize answers q in tenant. Asking about another subject than oneself needs policies:manage.
func (e *Enforcers) Authorize(ctx context.Context, tenant string, q authz.Question) (authz.Decision, error) {
	ctx, err := e.enter(ctx, tenant)
	if err != nil {
		return authz.Decision{}, err
	}
	p, ok := authz.PrincipalFrom(ctx)
	if !ok {
		return authz.Decision{}, fault.New(fault.Unauthenticated, "authentication required")
	}
	if q.Subject != "" && q.Subject != p.Subject {
		if err := e.Check(ctx, tenant, authz.ObjPolicies, authz.ActPoliciesManage); err != nil {
			return authz.Decision{}, err
		}
		if err := authz.ValidatePolicySubject(q.Subject); err != nil {
			return authz.Decision{}, err
		}
	}
	if err := authz.ValidateAction(q.Action); err != nil {
		return authz.Decision{}, err
	}
	if err := authz.ValidateObject(q.Object, false); err != nil {
		return authz.Decision{}, err
	}
	subject := authz.RuleSubject(q.Subject)
	if q.Subject == "" || q.Subject == p.Subject {
		if p.PlatformAdmin {
			return authz.Decision{Allowed: true, Reason: "the caller is a platform admin"}, nil
		}
		subject = p.Subject
	}
	enf, err := e.get(ctx, tenant)
	if err != nil {
		return authz.Decision{}, err
	}
	allowed, explain, err := enf.EnforceEx(subject, tenant, q.Object, q.Action)
	if err != nil {
		return authz.Decision{}, err
	}
	if len(explain) != 5 {
		return authz.Decision{Allowed: allowed, Reason: "no policy matched"}, nil
	}
	verb := "allowed"
	if !allowed {
		verb = "denied"
	}
	return authz.Decision{Allowed: allowed, Reason: fmt.Sprintf("%s by policy {subject %q, object %q, action %q, effect %q}",
		verb, authz.PolicySubject(explain[0]), explain[2], explain[3], explain[4])}, nil
}
