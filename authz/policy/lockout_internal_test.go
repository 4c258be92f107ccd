package policy

import (
	"testing"

	"github.com/agentcards/agentcards/authz"
)

// TestManaged: a tenant is managed while some user may manage its policies, by a role or a policy
// naming them, and no deny (of theirs or of one of their roles) takes it away; a role without
// members and an agent manage nothing.
func TestManaged(t *testing.T) {
	const tn = "acme"
	adminAllow := authz.BuiltinGrantRule(tn, authz.RoleAdmin, authz.ObjPolicies, authz.ActPoliciesManage)
	grant := func(subject, role string) authz.Rule { return authz.Assignment{Subject: subject, Role: role}.Rule(tn) }
	pol := func(subject, effect string) authz.Rule {
		return authz.Policy{Subject: subject, Object: authz.ObjPolicies, Action: authz.ActPoliciesManage, Effect: effect}.Rule(tn)
	}
	for _, c := range []struct {
		name  string
		rules []authz.Rule
		want  bool
	}{
		{"an admin", []authz.Rule{adminAllow, grant("alice", "admin")}, true},
		{"the admin role without members", []authz.Rule{adminAllow, grant("bob", "reader")}, false},
		{"an admin without the admin role's allow", []authz.Rule{grant("alice", "admin")}, false},
		{"a user allowed by a policy", []authz.Rule{pol("carol", authz.Allow)}, true},
		{"the last admin denied", []authz.Rule{adminAllow, grant("alice", "admin"), pol("alice", authz.Deny)}, false},
		{"one of two admins denied", []authz.Rule{adminAllow, grant("alice", "admin"), grant("bob", "admin"), pol("alice", authz.Deny)}, true},
		{"the admin role denied", []authz.Rule{adminAllow, grant("alice", "admin"), pol("admin", authz.Deny)}, false},
		{"a deny by another role of the admin", []authz.Rule{adminAllow, grant("alice", "admin"), grant("alice", "reader"), pol("reader", authz.Deny)}, false},
		{"a deny of a role another admin lacks", []authz.Rule{adminAllow, grant("alice", "admin"), grant("alice", "reader"), grant("bob", "admin"), pol("reader", authz.Deny)}, true},
		{"an agent allowed", []authz.Rule{pol(authz.AgentSubject("bot"), authz.Allow)}, false},
		{"an agent with the admin role", []authz.Rule{adminAllow, grant(authz.AgentSubject("bot"), "admin")}, false},
		{"another tenant's rules", []authz.Rule{authz.BuiltinGrantRule("other", authz.RoleAdmin, authz.ObjPolicies, authz.ActPoliciesManage),
			authz.Assignment{Subject: "alice", Role: "admin"}.Rule("other")}, false},
		{"nothing", nil, false},
	} {
		got, err := managed(tn, c.rules)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got != c.want {
			t.Errorf("%s: managed = %v, want %v", c.name, got, c.want)
		}
	}
}
