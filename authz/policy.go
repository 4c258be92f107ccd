package authz

import (
	"slices"
	"strings"
	"unicode"

	"github.com/agentcards/agentcards/authz/fault"
)

// ActDelegationsRead lets a subject read delegation records that are not its own.
const ActDelegationsRead = "delegations:read"

// ActAuditRead lets a subject read the tenant's audit trail (object ObjAudit) without managing
// its policies (those who manage them read it too).
const ActAuditRead = "audit:read"

// ObjAudit is the policy object of the tenant's audit trail.
const ObjAudit = "audit"

// knownActions are the actions a policy may name.
var knownActions = []string{ActCardsRead, ActCardsWrite, ActCardsDelete, ActCardsHeartbeat, ActDelegate, ActDelegationsRead, ActPoliciesManage, ActAuditRead, ActSearchManage, ActWebhooksManage, ActTrustManage, ActSourcesManage}

// MaxObjectSegment bounds one segment of an object, in bytes: agent ids and capability names are
// at most 128 characters of ASCII.
const MaxObjectSegment = 128

// MaxObjectLength bounds a whole object, in bytes, so it fits the policy table's column: two
// segments of MaxObjectSegment each under cards/.../capabilities/ would not.
const MaxObjectLength = 255

// Policy allows or denies a subject (a user, an agent or a built-in role) an action on an object
// (pattern) of the tenant. Deny wins over allow.
type Policy struct {
	// Subject is a user, an agent as "agent:{agentId}" (what it acts as with a delegation token),
	// or the name of a built-in role ("orchestrator"), which then stands for every member of the role.
	Subject string `json:"subject"`
	// Object is "policies", "audit", "search", "webhooks", "trust", "sources", "cards/{agentId}", "cards/{agentId}/capabilities/{name}" or
	// "delegations/{id}", where an id may be "*": any one segment, never crossing "/".
	Object string `json:"object"`
	Action string `json:"action"`
	Effect string `json:"effect"`
}

// Validate checks every field.
func (p Policy) Validate() error {
	if err := ValidatePolicySubject(p.Subject); err != nil {
		return err
	}
	if err := ValidateObject(p.Object, true); err != nil {
		return err
	}
	if err := ValidateAction(p.Action); err != nil {
		return err
	}
	if p.Effect != Allow && p.Effect != Deny {
		return fault.Errorf(fault.Invalid, "effect %q must be allow or deny: invalid", p.Effect)
	}
	return nil
}

// RuleSubject is the subject as the rules store it: a built-in role carries the role prefix, so
// that a user called "admin" is not the admin role.
func RuleSubject(s string) string {
	if _, ok := builtinRoles[s]; ok {
		return roleSubject(s)
	}
	return s
}

// PolicySubject is the inverse of RuleSubject: a stored rule's subject as policies name it.
func PolicySubject(s string) string { return strings.TrimPrefix(s, rolePrefix) }

// ValidatePolicySubject checks the subject of a policy or a question: a built-in role, a user,
// or an agent as AgentSubject(agentId).
func ValidatePolicySubject(s string) error {
	if _, ok := builtinRoles[s]; ok {
		return nil
	}
	return validateGrantee(s)
}

// ValidateAction checks that a names an action policies know.
func ValidateAction(a string) error {
	if !slices.Contains(knownActions, a) {
		return fault.Errorf(fault.Invalid, "action %q must be one of %v: invalid", a, knownActions)
	}
	return nil
}

// ValidateObject checks that obj is one of the known kinds with well-formed ids. With wildcards,
// an id segment may be "*" (one whole segment); an id never contains glob metacharacters, so a
// policy cannot grant more than its text says.
func ValidateObject(obj string, wildcards bool) error {
	if len(obj) > MaxObjectLength {
		return fault.Errorf(fault.Invalid, "object is longer than %d characters: invalid", MaxObjectLength)
	}
	segs := strings.Split(obj, "/")
	kind := segs[0]
	var ok bool
	switch {
	case kind == "policies" || kind == ObjAudit || kind == ObjSearch || kind == ObjWebhooks || kind == ObjTrust || kind == ObjSources:
		ok = len(segs) == 1
	case kind == "cards":
		ok = len(segs) == 2 || len(segs) == 4 && segs[2] == "capabilities"
	case kind == "delegations":
		ok = len(segs) == 2
	}
	if !ok {
		return fault.Errorf(fault.Invalid, "object %q must be policies, audit, search, webhooks, trust, sources, cards/{agentId}, cards/{agentId}/capabilities/{name} or delegations/{id}: invalid", obj)
	}
	for i := 1; i < len(segs); i += 2 {
		if err := validateSegment(segs[i], wildcards); err != nil {
			return fault.Errorf(fault.Invalid, "object %q: %s", obj, fault.MessageOf(err))
		}
	}
	return nil
}

func validateSegment(s string, wildcards bool) error {
	switch {
	case s == "":
		return fault.New(fault.Invalid, "empty segment: invalid")
	case s == "*" && wildcards:
		return nil
	case len(s) > MaxObjectSegment:
		return fault.Errorf(fault.Invalid, "segment longer than %d bytes: invalid", MaxObjectSegment)
	case strings.ContainsAny(s, `*?[]{}\!`):
		return fault.Errorf(fault.Invalid, "segment %q contains a glob character: invalid", s)
	}
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return fault.Errorf(fault.Invalid, "segment %q contains spaces or control characters: invalid", s)
		}
	}
	return nil
}

// Rule is p as the rules store keeps it for tenant.
func (p Policy) Rule(tenant string) Rule {
	return Rule{PType: "p", Values: []string{RuleSubject(p.Subject), tenant, p.Object, p.Action, p.Effect}}
}

// PolicyOfRule reads a stored "p" rule's values back; ok is false for a rule of another shape.
func PolicyOfRule(values []string) (p Policy, ok bool) {
	if len(values) != 5 {
		return Policy{}, false
	}
	return Policy{Subject: PolicySubject(values[0]), Object: values[2], Action: values[3], Effect: values[4]}, true
}

// Assignment gives a subject a role in a tenant.
type Assignment struct {
	Subject string `json:"subject"`
	Role    string `json:"role"`
}

// Validate checks both fields.
func (a Assignment) Validate() error {
	if err := validateGrantee(a.Subject); err != nil {
		return err
	}
	return ValidateRole(a.Role)
}

// Rule is a as the rules store keeps it for tenant.
func (a Assignment) Rule(tenant string) Rule { return groupingRule(tenant, a.Subject, a.Role) }

// AssignmentOfRule reads a stored "g" rule's values back; ok is false unless it assigns a role.
func AssignmentOfRule(values []string) (a Assignment, ok bool) {
	if len(values) < 2 {
		return Assignment{}, false
	}
	role, ok := strings.CutPrefix(values[1], rolePrefix)
	if !ok || role == "" {
		return Assignment{}, false
	}
	return Assignment{Subject: values[0], Role: role}, true
}

// Question asks whether Subject (the caller when empty; a built-in role name stands for the
// role, as in a policy) may perform Action on Object.
type Question struct {
	Subject string `json:"subject,omitempty"`
	Action  string `json:"action"`
	Object  string `json:"object"`
}

// Decision answers a Question; Reason names the deciding policy, or says none matched.
type Decision struct {
	Allowed bool   `json:"allowed"`
	Reason  string `json:"reason"`
}
