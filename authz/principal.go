// Package authz answers who the caller is and what they may do: principals from JWTs, the casbin
// model with per-tenant enforcers, and the built-in roles every tenant starts with.
package authz

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Errors of this package; test them with errors.Is.
var (
	// ErrUnauthenticated: no valid token. Every cause (missing, expired, wrong key) maps to it, so
	// a client learns nothing about which check failed.
	ErrUnauthenticated = errors.New("authentication required")
	// ErrForbidden: the caller is known but policy does not allow the action.
	ErrForbidden = errors.New("forbidden")
	// ErrInvalid: a malformed subject, role or object.
	ErrInvalid = errors.New("invalid")
	// ErrNotFound: a role assignment that does not exist.
	ErrNotFound = errors.New("not found")
)

// Principal is the authenticated caller of one request.
type Principal struct {
	Subject string
	// Tenant is the tenant the token acts in; empty for a platform admin's token without one.
	Tenant        string
	PlatformAdmin bool
	// Depth is how deep in a delegation chain the caller acts: 0 for a caller with its own token,
	// n for an agent presenting the delegation token of a depth-n delegation.
	Depth int
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

// RequirePlatformAdmin fails unless the caller is a platform admin.
func RequirePlatformAdmin(ctx context.Context) error {
	p, ok := PrincipalFrom(ctx)
	if !ok {
		return ErrUnauthenticated
	}
	if !p.PlatformAdmin {
		return fmt.Errorf("platform admin required: %w", ErrForbidden)
	}
	return nil
}

// MaxSubjectLength bounds subjects so they fit the policy table's columns.
const MaxSubjectLength = 255

// rolePrefix namespaces roles in casbin so that a user called "admin" is not the admin role.
const rolePrefix = "role:"

// ValidateSubject checks a user or agent name used in a token, a role assignment or a policy.
func ValidateSubject(s string) error {
	switch {
	case s == "":
		return fmt.Errorf("subject is required: %w", ErrInvalid)
	case utf8.RuneCountInString(s) > MaxSubjectLength:
		return fmt.Errorf("subject is longer than %d characters: %w", MaxSubjectLength, ErrInvalid)
	case strings.HasPrefix(s, rolePrefix):
		return fmt.Errorf("subject %q may not start with %q: %w", s, rolePrefix, ErrInvalid)
	case strings.ContainsAny(s, "*?[]{}\\"):
		return fmt.Errorf("subject %q may not contain glob characters: %w", s, ErrInvalid)
	}
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return fmt.Errorf("subject %q may not contain spaces or control characters: %w", s, ErrInvalid)
		}
	}
	return nil
}
