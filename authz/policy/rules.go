package policy

import (
	"context"
	"fmt"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/authz/fault"
)

// manage admits the caller in ctx into tenant and checks that it may manage the tenant's roles
// and policies: the first step of every entry point below but Authorize.
func (e *Enforcers) manage(ctx context.Context, tenant string) (context.Context, error) {
	ctx, err := e.enter(ctx, tenant)
	if err != nil {
		return ctx, err
	}
	return ctx, e.Check(ctx, tenant, authz.ObjPolicies, authz.ActPoliciesManage)
}

// rules returns the tenant's rows of one kind: role assignments (grouping) or policies.
func (e *Enforcers) rules(ctx context.Context, tenant string, grouping bool) ([][]string, error) {
	ctx, err := e.manage(ctx, tenant)
	if err != nil {
		return nil, err
	}
	enf, err := e.get(ctx, tenant)
	if err != nil {
		return nil, err
	}
	if grouping {
		return enf.GetFilteredGroupingPolicy(2, tenant)
	}
	return enf.GetFilteredPolicy(1, tenant)
}

// guard is the lockout guard of a change made by the caller in ctx, or none for a platform admin,
// who may make any change (and repair one). keep reports whether the change can take away the
// right to manage the tenant's policies at all; what and remedy word its refusal (keepManager).
func guard(ctx context.Context, tenant string, keep bool, what, remedy string) []Guard {
	if p, _ := authz.PrincipalFrom(ctx); p.PlatformAdmin || !keep {
		return nil
	}
	return []Guard{keepManager(tenant, what, remedy)}
}

// add stores rule, once valid says it may be and with the guards, and reports whether it was new.
// A new rule drops the tenant's enforcer, so the next check sees it.
func (e *Enforcers) add(ctx context.Context, tenant string, valid error, rule authz.Rule, guards func(context.Context) []Guard) (bool, error) {
	ctx, err := e.manage(ctx, tenant)
	if err != nil {
		return false, err
	}
	if valid != nil {
		return false, valid
	}
	n, err := e.store.AddRules(ctx, tenant, []authz.Rule{rule}, guards(ctx)...)
	if err != nil {
		return false, err
	}
	if n > 0 {
		e.Invalidate(tenant)
	}
	return n > 0, nil
}

// remove deletes rule, once valid says it may be and with the guards; missing is the error when
// there was none. It takes effect on the next request on this replica, and on another once its
// tenant row is read again (server.tenantCacheTtl).
func (e *Enforcers) remove(ctx context.Context, tenant string, valid error, rule authz.Rule, guards func(context.Context) []Guard, missing error) error {
	ctx, err := e.manage(ctx, tenant)
	if err != nil {
		return err
	}
	if valid != nil {
		return valid
	}
	n, err := e.store.RemoveRules(ctx, tenant, []authz.Rule{rule}, guards(ctx)...)
	e.Invalidate(tenant)
	if err != nil {
		return err
	}
	if n == 0 {
		return missing
	}
	return nil
}

// Roles lists the tenant's role assignments; only those allowed to manage policies may.
func (e *Enforcers) Roles(ctx context.Context, tenant string) ([]authz.Assignment, error) {
	rows, err := e.rules(ctx, tenant, true)
	if err != nil {
		return nil, err
	}
	out := make([]authz.Assignment, 0, len(rows))
	for _, r := range rows {
		if a, ok := authz.AssignmentOfRule(r); ok {
			out = append(out, a)
		}
	}
	return out, nil
}

// Grant assigns a role. It reports false when the assignment already existed.
// A role may carry a deny of policies:manage, so a grant can take the right away from its last
// holder too: such a grant is refused (fault.Lockout) unless a platform admin makes it.
func (e *Enforcers) Grant(ctx context.Context, tenant string, a authz.Assignment) (bool, error) {
	return e.add(ctx, tenant, a.Validate(), a.Rule(tenant), func(ctx context.Context) []Guard {
		return guard(ctx, tenant, true, fmt.Sprintf("giving %q the role %q", a.Subject, a.Role),
			"a deny policy of the role takes that right away; remove the deny first")
	})
}

// Revoke removes a role assignment. Revoking the last admin's admin role (or the role of the
// last subject allowed to manage the tenant's policies) is refused (fault.Lockout) unless a
// platform admin does it.
func (e *Enforcers) Revoke(ctx context.Context, tenant string, a authz.Assignment) error {
	return e.remove(ctx, tenant, a.Validate(), a.Rule(tenant), func(ctx context.Context) []Guard {
		return guard(ctx, tenant, true, fmt.Sprintf("revoking the role %q of %q", a.Role, a.Subject),
			"give another subject the admin role first")
	}, fault.Errorf(fault.NotFound, "role %q of %q: not found", a.Role, a.Subject))
}

// Policies lists the tenant's policies, the built-in roles' included, in the order they were added.
func (e *Enforcers) Policies(ctx context.Context, tenant string) ([]authz.Policy, error) {
	rows, err := e.rules(ctx, tenant, false)
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
// A deny of policies:manage that covers the last subjects allowed it is refused (fault.Lockout)
// unless a platform admin adds it.
func (e *Enforcers) AddPolicy(ctx context.Context, tenant string, p authz.Policy) (bool, error) {
	return e.add(ctx, tenant, p.Validate(), p.Rule(tenant), func(ctx context.Context) []Guard {
		return guard(ctx, tenant, p.Action == authz.ActPoliciesManage && p.Effect == authz.Deny,
			"this deny policy", "deny a narrower subject, or first give that right to a subject the deny does not cover")
	})
}

// RemovePolicy deletes a policy. Removing the last allow of policies:manage that some subject
// holds (the admin role's built-in one, say) is refused (fault.Lockout) unless a platform admin
// does it.
func (e *Enforcers) RemovePolicy(ctx context.Context, tenant string, p authz.Policy) error {
	return e.remove(ctx, tenant, p.Validate(), p.Rule(tenant), func(ctx context.Context) []Guard {
		return guard(ctx, tenant, p.Action == authz.ActPoliciesManage && p.Effect == authz.Allow,
			"removing this policy", "first allow policies:manage on policies to a subject by another policy or role")
	}, fault.Errorf(fault.NotFound, "policy (subject %q, object %q, action %q, effect %q): not found", p.Subject, p.Object, p.Action, p.Effect))
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
