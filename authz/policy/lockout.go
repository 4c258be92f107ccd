package policy

import (
	"fmt"
	"strings"

	"github.com/casbin/casbin/v2"
	"github.com/casbin/casbin/v2/persist"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/authz/fault"
)

// Guard is a condition that a change of a tenant's rules must leave true. The store calls Check
// in the change's transaction, after the write and while the tenant's rules are locked against
// other writers, with the tenant's role assignments and its policies of Action as they then
// stand; an error from Check undoes the change and is what the change returns. So two changes at
// once cannot both pass a check that only one of them may.
type Guard struct {
	// Action selects the policies Check is given (with every role assignment).
	Action string
	// Check refuses the rules a change leaves, with the error the change then fails with.
	Check func(rules []authz.Rule) error
}

// keepManager is the guard of a change of roles or policies made by a member of tenant: it may not
// leave the tenant without a subject allowed policies:manage on policies, for then no one but a
// platform admin could manage its roles and policies again. The refusal says what (the change)
// would do, and what to do instead (remedy).
func keepManager(tenant, what, remedy string) Guard {
	return Guard{Action: authz.ActPoliciesManage, Check: func(rules []authz.Rule) error {
		ok, err := managed(tenant, rules)
		if err != nil {
			return err
		}
		if !ok {
			return fault.Errorf(fault.Lockout, "%s would leave no one who may manage the tenant's roles and policies "+
				"(policies:manage on policies): %s; a platform admin may still make the change", what, remedy)
		}
		return nil
	}}
}

// managed reports whether rules (a tenant's role assignments and its policies:manage policies)
// allow policies:manage on policies to some subject that can call with it: a user, as an assignment
// or a policy names it. A role is no caller, and an agent ("agent:...") calls only with a
// delegation token, which opens no management entry point. The rules are evaluated by the same
// model as every check, deny rules and role assignments included.
func managed(tenant string, rules []authz.Rule) (bool, error) {
	m, err := NewModel()
	if err != nil {
		return false, err
	}
	for _, r := range rules {
		if err := persist.LoadPolicyArray(append([]string{r.PType}, r.Values...), m); err != nil {
			return false, fmt.Errorf("load rule %s %v: %w", r.PType, r.Values, err)
		}
	}
	enf, err := casbin.NewEnforcer(m)
	if err != nil {
		return false, err
	}
	if err := enf.BuildRoleLinks(); err != nil {
		return false, err
	}
	seen := map[string]bool{}
	for _, r := range rules {
		if len(r.Values) == 0 {
			continue
		}
		s := r.Values[0]
		if seen[s] || authz.PolicySubject(s) != s || strings.HasPrefix(s, authz.AgentPrefix) {
			continue
		}
		seen[s] = true
		ok, err := enf.Enforce(s, tenant, authz.ObjPolicies, authz.ActPoliciesManage)
		if err != nil {
			return false, err
		}
		if ok {
			return true, nil
		}
	}
	return false, nil
}
