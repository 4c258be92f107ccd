package authz

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"slices"

	"github.com/agentcards/agentcards/authz/fault"
)

// Actions a policy can allow or deny.
const (
	ActCardsRead   = "cards:read"
	ActCardsWrite  = "cards:write"
	ActCardsDelete = "cards:delete"
	// ActCardsHeartbeat is reporting that a card's agent is alive (a heartbeat). An agent with a
	// delegation token may always report its own card.
	ActCardsHeartbeat = "cards:heartbeat"
	ActDelegate       = "delegate"
	ActPoliciesManage = "policies:manage"
	// ActSearchManage is managing how the tenant's searches read queries: its synonym sets.
	// Reading them needs cards:read only.
	ActSearchManage = "search:manage"
	// ActWebhooksManage is managing the tenant's webhook subscriptions and reading their
	// delivery records: a subscriber receives every card change its filter matches, whatever
	// the subscriber may read, so it is an admin's.
	ActWebhooksManage = "webhooks:manage"
	// ActTrustManage is managing the tenant's trust policy: the issuers whose keys vouch for
	// imported cards. Reading it needs cards:read only.
	ActTrustManage = "trust:manage"
	// ActSourcesManage is managing the registries the tenant follows (its sources): what a
	// source lists is mirrored into the tenant's cards, so it is an admin's.
	ActSourcesManage = "sources:manage"
)

// Objects (or object patterns) that policies name.
const (
	ObjAllCards        = "cards/*"
	ObjAllCapabilities = "cards/*/capabilities/*"
	ObjPolicies        = "policies"
	// ObjSearch is the tenant's search settings (its synonym sets).
	ObjSearch = "search"
	// ObjWebhooks is the tenant's webhook subscriptions.
	ObjWebhooks = "webhooks"
	// ObjTrust is the tenant's trust policy.
	ObjTrust = "trust"
	// ObjSources is the tenant's followed sources.
	ObjSources = "sources"
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
	RoleReader: {{ObjAllCards, ActCardsRead}},
	RoleEditor: {
		{ObjAllCards, ActCardsRead}, {ObjAllCards, ActCardsWrite}, {ObjAllCards, ActCardsDelete},
		{ObjAllCards, ActCardsHeartbeat},
	},
	RoleOrchestrator: {{ObjAllCards, ActCardsRead}, {ObjAllCapabilities, ActDelegate}},
	RoleAdmin: {
		{ObjAllCards, ActCardsRead}, {ObjAllCards, ActCardsWrite}, {ObjAllCards, ActCardsDelete},
		{ObjAllCards, ActCardsHeartbeat}, {ObjAllCapabilities, ActDelegate}, {ObjPolicies, ActPoliciesManage},
		{ObjSearch, ActSearchManage}, {ObjWebhooks, ActWebhooksManage}, {ObjTrust, ActTrustManage},
		{ObjSources, ActSourcesManage},
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

// BuiltinGrantRule is the rule by which the built-in role allows act on obj in tenant: a
// migration that gives a built-in role a new action writes it into existing tenants.
func BuiltinGrantRule(tenant, role, obj, act string) Rule {
	return Rule{PType: "p", Values: []string{roleSubject(role), tenant, obj, act, Allow}}
}

// SeedRules returns the rules a new tenant starts with: the built-in roles' permissions and the
// admin role for each of admins. Stores write them in the transaction that creates the tenant.
func SeedRules(tenant string, admins []string) []Rule {
	var rules []Rule
	for _, role := range BuiltinRoles() {
		for _, g := range builtinRoles[role] {
			rules = append(rules, BuiltinGrantRule(tenant, role, g.obj, g.act))
		}
	}
	for _, a := range admins {
		rules = append(rules, groupingRule(tenant, a, RoleAdmin))
	}
	return rules
}

// MaxRuleValues is how many values a stored rule has room for (casbin_rules v0..v5).
const MaxRuleValues = 6

// RuleKey is the key that dedupes stored rules: the hex SHA-256 of ptype and the six values
// (missing ones empty), each length-prefixed so that no two different rules encode alike.
func RuleKey(ptype string, values []string) string {
	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	write := func(s string) {
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(s)))])
		h.Write([]byte(s))
	}
	write(ptype)
	for i := range MaxRuleValues {
		v := ""
		if i < len(values) {
			v = values[i]
		}
		write(v)
	}
	return hex.EncodeToString(h.Sum(nil))
}
