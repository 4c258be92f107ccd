package authz

import (
	"slices"

	"github.com/agentcards/agentcards/authz/fault"
)

// Actions a policy can allow or deny.
const (
	ActCardsRead      = "cards:read"
	ActCardsWrite     = "cards:write"
	ActCardsDelete    = "cards:delete"
	ActDelegate       = "delegate"
	ActPoliciesManage = "policies:manage"
)

// Objects (or object patterns) that policies name.
const (
	ObjAllCards        = "cards/*"
	ObjAllCapabilities = "cards/*/capabilities/*"
	ObjPolicies        = "policies"
)

// CardObject is the policy object of one card.
func CardObject(agentID string) string { return "cards/" + agentID }

// Effects of a policy rule.
const (
	Allow = "allow"
	Deny  = "deny"
)

// The built-in roles seeded into every tenant.
const (
	RoleAdmin        = "admin"
	RoleEditor       = "editor"
	RoleReader       = "reader"
	RoleOrchestrator = "orchestrator"
)

// Rule is one rule as the rules store keeps it (casbin's p and g lines): its type ("p" or "g") and its values.
type Rule struct {
	PType  string
	Values []string
}

type grant struct{ obj, act string }

// builtinRoles lists what each built-in role may do; admins may do everything in their tenant,
// including managing roles and policies.
var builtinRoles = map[string][]grant{
	RoleReader:       {{ObjAllCards, ActCardsRead}},
	RoleEditor:       {{ObjAllCards, ActCardsRead}, {ObjAllCards, ActCardsWrite}, {ObjAllCards, ActCardsDelete}},
	RoleOrchestrator: {{ObjAllCards, ActCardsRead}, {ObjAllCapabilities, ActDelegate}},
	RoleAdmin: {
		{ObjAllCards, ActCardsRead}, {ObjAllCards, ActCardsWrite}, {ObjAllCards, ActCardsDelete},
		{ObjAllCapabilities, ActDelegate}, {ObjPolicies, ActPoliciesManage},
	},
}

// BuiltinRoles returns the names of the built-in roles, sorted.
func BuiltinRoles() []string {
	names := make([]string, 0, len(builtinRoles))
	for name := range builtinRoles {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// ValidateRole checks that role names a built-in role.
func ValidateRole(role string) error {
	if _, ok := builtinRoles[role]; !ok {
		return fault.Errorf(fault.Invalid, "role %q must be one of %v: invalid", role, BuiltinRoles())
	}
	return nil
}

// roleSubject is the rule subject standing for a role.
func roleSubject(role string) string { return rolePrefix + role }

// groupingRule assigns role to subject in tenant.
func groupingRule(tenant, subject, role string) Rule {
	return Rule{PType: "g", Values: []string{subject, roleSubject(role), tenant}}
}

// SeedRules returns the rules a new tenant starts with: the built-in roles' permissions and the
// admin role for each of admins. Stores write them in the transaction that creates the tenant.
func SeedRules(tenant string, admins []string) []Rule {
	var rules []Rule
	for _, role := range BuiltinRoles() {
		for _, g := range builtinRoles[role] {
			rules = append(rules, Rule{PType: "p", Values: []string{roleSubject(role), tenant, g.obj, g.act, Allow}})
		}
	}
	for _, a := range admins {
		rules = append(rules, groupingRule(tenant, a, RoleAdmin))
	}
	return rules
}
