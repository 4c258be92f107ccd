package authz

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// ActDelegationsRead lets a subject read delegation records that are not its own.
const ActDelegationsRead = "delegations:read"

// knownActions are the actions a policy may name.
var knownActions = []string{ActCardsRead, ActCardsWrite, ActCardsDelete, ActDelegate, ActDelegationsRead, ActPoliciesManage}

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
	// Object is "policies", "cards/{agentId}", "cards/{agentId}/capabilities/{name}" or
	// "delegations/{id}", where an id may be "*": any one segment, never crossing "/".
	Object string `json:"object"`
	Action string `json:"action"`
	Effect string `json:"effect"`
}

// Validate checks every field.
func (p Policy) Validate() error {
	if err := validatePolicySubject(p.Subject); err != nil {
		return err
	}
	if err := ValidateObject(p.Object, true); err != nil {
		return err
	}
	if err := validateAction(p.Action); err != nil {
		return err
	}
	if p.Effect != Allow && p.Effect != Deny {
		return fmt.Errorf("effect %q must be allow or deny: %w", p.Effect, ErrInvalid)
	}
	return nil
}

// casbinSubject is the subject as casbin stores it: roles carry the role prefix.
func casbinSubject(s string) string {
	if _, ok := builtinRoles[s]; ok {
		return roleSubject(s)
	}
	return s
}

// apiSubject is the inverse of casbinSubject.
func apiSubject(s string) string { return strings.TrimPrefix(s, rolePrefix) }

func validatePolicySubject(s string) error {
	if _, ok := builtinRoles[s]; ok {
		return nil
	}
	return validateGrantee(s)
}

func validateAction(a string) error {
	if !slices.Contains(knownActions, a) {
		return fmt.Errorf("action %q must be one of %v: %w", a, knownActions, ErrInvalid)
	}
	return nil
}

// ValidateObject checks that obj is one of the known kinds with well-formed ids. With wildcards,
// an id segment may be "*" (one whole segment); an id never contains glob metacharacters, so a
// policy cannot grant more than its text says.
func ValidateObject(obj string, wildcards bool) error {
	if len(obj) > MaxObjectLength {
		return fmt.Errorf("object is longer than %d characters: %w", MaxObjectLength, ErrInvalid)
	}
	segs := strings.Split(obj, "/")
	kind := segs[0]
	var ok bool
	switch {
	case kind == "policies":
		ok = len(segs) == 1
	case kind == "cards":
		ok = len(segs) == 2 || len(segs) == 4 && segs[2] == "capabilities"
	case kind == "delegations":
		ok = len(segs) == 2
	}
	if !ok {
		return fmt.Errorf("object %q must be policies, cards/{agentId}, cards/{agentId}/capabilities/{name} or delegations/{id}: %w", obj, ErrInvalid)
	}
	for i := 1; i < len(segs); i += 2 {
		if err := validateSegment(segs[i], wildcards); err != nil {
			return fmt.Errorf("object %q: %w", obj, err)
		}
	}
	return nil
}

func validateSegment(s string, wildcards bool) error {
	switch {
	case s == "":
		return fmt.Errorf("empty segment: %w", ErrInvalid)
	case s == "*" && wildcards:
		return nil
	case len(s) > MaxObjectSegment:
		return fmt.Errorf("segment longer than %d bytes: %w", MaxObjectSegment, ErrInvalid)
	case strings.ContainsAny(s, `*?[]{}\!`):
		return fmt.Errorf("segment %q contains a glob character: %w", s, ErrInvalid)
	}
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return fmt.Errorf("segment %q contains spaces or control characters: %w", s, ErrInvalid)
		}
	}
	return nil
}

func (p Policy) rule(tenant string) Rule {
	return Rule{PType: "p", Values: []string{casbinSubject(p.Subject), tenant, p.Object, p.Action, p.Effect}}
}

// Policies lists the tenant's policies, the built-in roles' included, in the order they were added.
func (e *Enforcers) Policies(ctx context.Context, tenant string) ([]Policy, error) {
	if err := e.Check(ctx, tenant, ObjPolicies, ActPoliciesManage); err != nil {
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
	out := make([]Policy, 0, len(rows))
	for _, r := range rows {
		if len(r) == 5 {
			out = append(out, Policy{Subject: apiSubject(r[0]), Object: r[2], Action: r[3], Effect: r[4]})
		}
	}
	return out, nil
}

// AddPolicy stores a policy. It reports false when the policy already existed.
func (e *Enforcers) AddPolicy(ctx context.Context, tenant string, p Policy) (bool, error) {
	if err := e.Check(ctx, tenant, ObjPolicies, ActPoliciesManage); err != nil {
		return false, err
	}
	if err := p.Validate(); err != nil {
		return false, err
	}
	n, err := e.store.AddRules(ctx, tenant, []Rule{p.rule(tenant)})
	if err != nil {
		return false, err
	}
	e.Invalidate(tenant)
	return n > 0, nil
}

// RemovePolicy deletes a policy; it takes effect on the next request on this replica, and on
// another once its tenant row is re-read (server.tenantCacheTtl).
func (e *Enforcers) RemovePolicy(ctx context.Context, tenant string, p Policy) error {
	if err := e.Check(ctx, tenant, ObjPolicies, ActPoliciesManage); err != nil {
		return err
	}
	if err := p.Validate(); err != nil {
		return err
	}
	n, err := e.store.RemoveRules(ctx, tenant, []Rule{p.rule(tenant)})
	e.Invalidate(tenant)
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("policy (subject %q, object %q, action %q, effect %q): %w", p.Subject, p.Object, p.Action, p.Effect, ErrNotFound)
	}
	return nil
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

// Authorize answers q in tenant. Asking about another subject than oneself needs policies:manage.
func (e *Enforcers) Authorize(ctx context.Context, tenant string, q Question) (Decision, error) {
	p, ok := PrincipalFrom(ctx)
	if !ok {
		return Decision{}, ErrUnauthenticated
	}
	if q.Subject != "" && q.Subject != p.Subject {
		if err := e.Check(ctx, tenant, ObjPolicies, ActPoliciesManage); err != nil {
			return Decision{}, err
		}
		if err := validatePolicySubject(q.Subject); err != nil {
			return Decision{}, err
		}
	}
	if err := validateAction(q.Action); err != nil {
		return Decision{}, err
	}
	if err := ValidateObject(q.Object, false); err != nil {
		return Decision{}, err
	}
	subject := casbinSubject(q.Subject)
	if q.Subject == "" || q.Subject == p.Subject {
		if p.PlatformAdmin {
			return Decision{Allowed: true, Reason: "the caller is a platform admin"}, nil
		}
		subject = p.Subject
	}
	enf, err := e.get(ctx, tenant)
	if err != nil {
		return Decision{}, err
	}
	allowed, explain, err := enf.EnforceEx(subject, tenant, q.Object, q.Action)
	if err != nil {
		return Decision{}, err
	}
	if len(explain) != 5 {
		return Decision{Allowed: allowed, Reason: "no policy matched"}, nil
	}
	verb := "allowed"
	if !allowed {
		verb = "denied"
	}
	return Decision{Allowed: allowed, Reason: fmt.Sprintf("%s by policy {subject %q, object %q, action %q, effect %q}",
		verb, apiSubject(explain[0]), explain[2], explain[3], explain[4])}, nil
}
