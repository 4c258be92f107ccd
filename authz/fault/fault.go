// Package fault is the one vocabulary of failure the domain packages share (authz, tenants, cards
// and its subpackages): a Kind says what went wrong in terms a client can act on, and an *Error
// carries its Kind, the message a client may read, and the cause, which is for the logs only.
// A door maps each Kind to its own status (web/errors.go to HTTP, used both ways) and shows
// Message, never the text of a wrapped chain, which may name addresses, drivers or files.
//
// It lives under authz because authz is the package every domain package already imports, and
// it imports nothing itself.
package fault

import (
	"errors"
	"fmt"
)

// Kind is a kind of failure; its value is the error code clients see ("not_found").
type Kind string

// The kinds of failure. A door gives each one status; a new kind needs a row in every door's
// table (web/errors.go checks that it has one for each kind listed in Kinds).
const (
	// Invalid: a request that is well-formed but breaks a rule (a field, a parameter, a cursor).
	Invalid Kind = "invalid"
	// Malformed: a body that is not the JSON it must be.
	Malformed Kind = "malformed_json"
	// TooLarge: a body, card, result or answer over its limit.
	TooLarge Kind = "too_large"
	// Unauthenticated: no credential the entry point accepts. Every cause maps to it.
	Unauthenticated Kind = "unauthorized"
	// Forbidden: the caller is known but policy does not allow the action.
	Forbidden Kind = "forbidden"
	// Suspended: the tenant exists, and the caller's, but is suspended.
	Suspended Kind = "tenant_suspended"
	// NotFound: no such resource, or one the caller may not know of (another tenant's).
	NotFound Kind = "not_found"
	// Conflict: the resource exists already, or its state does not allow the change.
	Conflict Kind = "conflict"
	// CardDisabled: the agent's card is disabled: kept, but not to be delegated to.
	CardDisabled Kind = "card_disabled"
	// AgentOffline: the agent's card is offline and its tenant refuses delegations to it.
	AgentOffline Kind = "agent_offline"
	// Lockout: a change of roles or policies that would leave no one in the tenant allowed to
	// manage its roles and policies; another subject must be given that right first.
	Lockout Kind = "lockout"
	// Stale: a precondition (If-Match, If-None-Match, a revision) does not hold.
	Stale Kind = "precondition_failed"
	// Expired: the resource's time is over (a delegation's deadline).
	Expired Kind = "expired"
	// CursorExpired: a change-feed cursor older than the feed keeps; the client lists the cards
	// again and follows from a new cursor.
	CursorExpired Kind = "cursor_expired"
	// DepthExceeded: a delegation chain deeper than the server allows.
	DepthExceeded Kind = "depth_exceeded"
	// EndpointBlocked: an agent endpoint at an address the outbound guard refuses.
	EndpointBlocked Kind = "endpoint_blocked"
	// URLBlocked: a URL to fetch (an import, a jku) at an address or redirect the guard refuses.
	URLBlocked Kind = "blocked_url"
	// BadSignature: a signature that a key rejects.
	BadSignature Kind = "invalid_signature"
	// FetchFailed: a URL that could not be fetched (unreachable, or its server failed).
	FetchFailed Kind = "fetch_failed"
	// RateLimited: more requests than the tenant's rate allows.
	RateLimited Kind = "rate_limited"
	// AgentUnavailable: the agent's breaker is open after repeated failures.
	AgentUnavailable Kind = "agent_unavailable"
	// Unavailable: this server cannot serve now (shutting down, its database down).
	Unavailable Kind = "unavailable"
	// Timeout: the request took longer than it may.
	Timeout Kind = "timeout"
	// VersionNotSupported: a protocol version the resource does not declare (A2A's
	// VersionNotSupportedError: an agent card asked for in a version none of its interfaces speaks).
	VersionNotSupported Kind = "version_not_supported"
)

// Kinds lists every kind, for the doors' tables to be checked against.
var Kinds = []Kind{Invalid, Malformed, TooLarge, Unauthenticated, Forbidden, Suspended, NotFound,
	Conflict, CardDisabled, AgentOffline, Lockout, Stale, Expired, DepthExceeded, EndpointBlocked, URLBlocked, BadSignature, FetchFailed,
	RateLimited, AgentUnavailable, Unavailable, Timeout, VersionNotSupported}

// Error makes a bare Kind an error, so that errors.Is(err, fault.NotFound) works on any chain.
func (k Kind) Error() string { return string(k) }

// Error is a failure of a kind, with the message a client may read and the cause behind it.
type Error struct {
	Kind Kind
	// Message says what failed in terms of the request ("card \"agt_1\" not found"); it is
	// written for the client and names nothing internal.
	Message string
	// Cause is what went wrong underneath, for the logs; it may be nil and is never shown.
	Cause error
}

func (e *Error) Error() string {
	if e.Cause == nil {
		return e.Message
	}
	return e.Message + ": " + e.Cause.Error()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Cause }

// Is reports whether target is e's Kind.
func (e *Error) Is(target error) bool {
	k, ok := target.(Kind)
	return ok && k == e.Kind
}

// New returns an error of kind with the client message msg.
func New(kind Kind, msg string) error { return &Error{Kind: kind, Message: msg} }

// Errorf returns an error of kind whose client message is formatted from format and args. The
// format has no %w: a cause goes through Wrap, so that its text stays out of the message.
func Errorf(kind Kind, format string, args ...any) error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns an error of kind with the client message formatted from format and args, and
// cause kept behind it for the logs (errors.Is and errors.As see through to it).
func Wrap(cause error, kind Kind, format string, args ...any) error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...), Cause: cause}
}

// KindOf returns the kind of err: that of the first *Error in its chain, else the first bare
// Kind; "" for an error of no kind, which a door treats as a failure of its own (a bug).
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	var k Kind
	if errors.As(err, &k) {
		return k
	}
	return ""
}

// MessageOf returns what a client may read of err: the Message of the first *Error in its
// chain. A bare Kind gives its code only; an error of no kind gives "".
func MessageOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	var k Kind
	if errors.As(err, &k) {
		return string(k)
	}
	return ""
}
