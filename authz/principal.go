// Package authz is the vocabulary of authorization that every other package shares: the
// principal (who calls), subjects, actions, objects, roles, policies and policy versions, and
// their validation. It imports no framework: the casbin enforcement is in authz/policy and the
// JWTs and service keys are in authz/token, so domain packages can name a caller and an action
// without pulling either in.
package authz

import (
	"context"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentcards/agentcards/authz/fault"
)

// Errors of this package; test them with errors.Is. Each is the kind of authz/fault it names,
// shared by every domain package, so errors.Is does not tell this package's ErrNotFound from
// another's: the message says what was not found.
var (
	// ErrUnauthenticated: no valid token. Every cause (missing, expired, wrong key) maps to it, so
	// a client learns nothing about which check failed.
	ErrUnauthenticated = fault.Unauthenticated
	// ErrForbidden: the caller is known but policy does not allow the action.
	ErrForbidden = fault.Forbidden
	// ErrInvalid: a malformed subject, role or object.
	ErrInvalid = fault.Invalid
	// ErrNotFound: a role assignment that does not exist.
	ErrNotFound = fault.NotFound
)

// errNoCaller is the refusal of an entry point called without a principal, or with a delegation
// token where that is no credential.
var errNoCaller = fault.New(fault.Unauthenticated, "authentication required")

// Principal is the authenticated caller of one request.
type Principal struct {
	Subject string
	// Tenant is the tenant the token acts in; empty for a platform admin's token without one.
	Tenant        string
	PlatformAdmin bool
	// Depth is how deep in a delegation chain the caller acts: 0 for a caller with its own token,
	// n for an agent presenting the delegation token of a depth-n delegation.
	Depth int
	// Delegated marks an agent acting with a delegation token we signed; its Subject is then
	// AgentSubject(agentId), a namespace no user can have. Such a caller may only delegate further
	// and read its own delegations.
	Delegated bool
}

type principalKey struct{}

// WithPrincipal returns a context that carries p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the principal carried by ctx, if any.
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// Caller returns the principal in ctx for an entry point that a delegation token does not open,
// which is every one but delegating and reading one's own delegations (see Delegator). Without a
// principal, or with an agent's delegation token, it fails with ErrUnauthenticated: there the
// token is no credential at all. Every service entry point gets its caller through Caller or
// Delegator, so a door (REST, MCP, a CLI) cannot widen what a delegation token may do.
func Caller(ctx context.Context) (Principal, error) {
	p, ok := PrincipalFrom(ctx)
	if !ok || p.Delegated {
		return Principal{}, errNoCaller
	}
	return p, nil
}

// Delegator returns the principal in ctx for the entry points that a delegation token opens:
// an agent called with one may delegate further, one level deeper, and read what it delegated.
func Delegator(ctx context.Context) (Principal, error) {
	p, ok := PrincipalFrom(ctx)
	if !ok {
		return Principal{}, errNoCaller
	}
	return p, nil
}

// Visitor checks the caller of an open entry point (the A2A card and agent list): anyone may
// call, with or without a token, except an agent with a delegation token, which is no credential
// there either.
func Visitor(ctx context.Context) error {
	if p, ok := PrincipalFrom(ctx); ok && p.Delegated {
		return ErrUnauthenticated
	}
	return nil
}

// RequirePlatformAdmin fails unless the caller is a platform admin.
func RequirePlatformAdmin(ctx context.Context) error {
	p, err := Caller(ctx)
	if err != nil {
		return err
	}
	if !p.PlatformAdmin {
		return fault.New(fault.Forbidden, "platform admin required: forbidden")
	}
	return nil
}

// MaxSubjectLength bounds subjects so they fit the policy table's columns.
const MaxSubjectLength = 255

// rolePrefix namespaces roles in the rules so that a user called "admin" is not the admin role.
const rolePrefix = "role:"

// AgentPrefix namespaces agents acting with a delegation token, so that an agent whose id is
// "alice" is never the user alice: policies and roles name it "agent:alice".
const AgentPrefix = "agent:"

// JobPrefix namespaces the service's own jobs (a scheduled refresh, a delegation timing out) in
// the audit trail, so that "agentcards:refresh" is never a user's doing.
const JobPrefix = "agentcards:"

// AgentSubject is the subject an agent acts as when it presents a delegation token.
func AgentSubject(agentID string) string { return AgentPrefix + agentID }

// ValidateSubject checks a user name used in a token, a role assignment or a policy. Neither
// the role, the agent nor the job namespace may be used, so a user cannot pass for any of them.
func ValidateSubject(s string) error {
	switch {
	case strings.HasPrefix(s, AgentPrefix):
		return fault.Errorf(fault.Invalid, "subject %q may not start with %q: invalid", s, AgentPrefix)
	case s == "":
		return fault.New(fault.Invalid, "subject is required: invalid")
	case utf8.RuneCountInString(s) > MaxSubjectLength:
		return fault.Errorf(fault.Invalid, "subject is longer than %d characters: invalid", MaxSubjectLength)
	case strings.HasPrefix(s, rolePrefix):
		return fault.Errorf(fault.Invalid, "subject %q may not start with %q: invalid", s, rolePrefix)
	case strings.HasPrefix(s, JobPrefix):
		return fault.Errorf(fault.Invalid, "subject %q may not start with %q: invalid", s, JobPrefix)
	case strings.ContainsAny(s, "*?[]{}\\"):
		return fault.Errorf(fault.Invalid, "subject %q may not contain glob characters: invalid", s)
	}
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return fault.Errorf(fault.Invalid, "subject %q may not contain spaces or control characters: invalid", s)
		}
	}
	return nil
}

// validateGrantee checks a subject that policies and role assignments may name: a user, or an
// agent as AgentSubject(agentId).
func validateGrantee(s string) error {
	if id, ok := strings.CutPrefix(s, AgentPrefix); ok {
		if err := ValidateSubject(id); err != nil {
			return fault.Errorf(fault.Invalid, "agent subject %q: %s", s, fault.MessageOf(err))
		}
		return nil
	}
	return ValidateSubject(s)
}
