// Package webhooks delivers the tenants' card changes to the URLs their admins subscribe: each
// change of the change feed (cards.changes) that a subscription's filter matches goes to its URL
// as a CloudEvents 1.0 JSON POST, signed with the service's key (a detached JWS the published
// JWKS verifies), through the SSRF guard, at least once and in feed order, by one replica at a
// time (a lease per subscription). docs/webhooks.md describes it for operators and receivers.
package webhooks

import (
	"net/netip"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/agentcards/agentcards/authz/fault"
)

// The event types, the CloudEvents "type" of each change. The change feed tells an upsert from a
// removal, not a creation from an update (an upsert carries the card as it is when read), so the
// types say what the feed knows.
const (
	// TypeUpserted: a card was created or changed; data.card is the card as it is now.
	TypeUpserted = "agentcards.card.upserted"
	// TypeRemoved: a card was removed; data has its agentId and the revision removed.
	TypeRemoved = "agentcards.card.removed"
)

// Types are the event types a filter may name.
var Types = []string{TypeUpserted, TypeRemoved}

// The states of a subscription.
const (
	// StateActive: its last delivery succeeded (or none has failed yet).
	StateActive = "active"
	// StateFailing: its last delivery failed; it is retried with backoff since FailingSince.
	StateFailing = "failing"
	// StateDisabled: no delivery is attempted; set by an admin, or after Config.DisableAfter of
	// failures in a row. Setting it active again resumes from where delivery stopped.
	StateDisabled = "disabled"
)

// Bounds of a subscription.
const (
	MaxURLBytes   = 2048
	MaxAgentGlobs = 32
	MaxGlobBytes  = 128
)

// Webhook is a subscription: where a tenant's card changes go, and which.
type Webhook struct {
	ID  string `json:"id"`
	URL string `json:"url"`
	// Types are the event types delivered; empty: every type.
	Types []string `json:"types"`
	// AgentIDs are globs (path.Match: * and ? within an id, [a-z] classes) of the agents whose
	// changes are delivered; empty: every agent.
	AgentIDs []string `json:"agentIds"`
	State    string   `json:"state"`
	// Failures counts the failed attempts since the last success; FailingSince is the first of
	// them, LastError what the last said, NextAttemptAt when the next is due.
	Failures      int        `json:"failures"`
	FailingSince  *time.Time `json:"failingSince,omitempty"`
	LastError     string     `json:"lastError,omitempty"`
	NextAttemptAt time.Time  `json:"nextAttemptAt"`
	CreatedAt     time.Time  `json:"createdAt"`
	UpdatedAt     time.Time  `json:"updatedAt"`
}

// Delivery is one attempt to deliver an event, as the subscription's records keep it.
type Delivery struct {
	Seq       int64  `json:"seq"`
	EventID   string `json:"eventId"`
	Type      string `json:"type"`
	AgentID   string `json:"agentId"`
	Status    int    `json:"status,omitempty"`
	OK        bool   `json:"ok"`
	Error     string `json:"error,omitempty"`
	LatencyMs int64  `json:"latencyMs"`
	// At is when the attempt began.
	At time.Time `json:"at"`
}

// Filter is what a subscription delivers.
type Filter struct {
	Types    []string
	AgentIDs []string
}

// Matches reports whether the filter takes an event of type typ about agentID.
func (f Filter) Matches(typ, agentID string) bool {
	if len(f.Types) > 0 && !slices.Contains(f.Types, typ) {
		return false
	}
	if len(f.AgentIDs) == 0 {
		return true
	}
	for _, g := range f.AgentIDs {
		if ok, _ := path.Match(g, agentID); ok {
			return true
		}
	}
	return false
}

// Validate checks the filter: known types, each once, and well-formed globs within bounds.
func (f Filter) Validate() error {
	for i, t := range f.Types {
		if !slices.Contains(Types, t) {
			return fault.Errorf(fault.Invalid, "types: %q is not an event type (want %s): invalid", t, strings.Join(Types, " or "))
		}
		if slices.Contains(f.Types[:i], t) {
			return fault.Errorf(fault.Invalid, "types: %q twice: invalid", t)
		}
	}
	if len(f.AgentIDs) > MaxAgentGlobs {
		return fault.Errorf(fault.Invalid, "agentIds: more than %d globs: invalid", MaxAgentGlobs)
	}
	for _, g := range f.AgentIDs {
		if _, err := path.Match(g, ""); err != nil || g == "" || len(g) > MaxGlobBytes || strings.Contains(g, "/") {
			return fault.Errorf(fault.Invalid, "agentIds: %q is not a glob of at most %d bytes without /: invalid", g, MaxGlobBytes)
		}
	}
	return nil
}

// RefusedAddress reports whether an IP address is one the outbound guard refuses; the service
// asks it of a URL whose host is a literal address, so that such a subscription is refused at
// once rather than failing every delivery.
type RefusedAddress func(netip.Addr) bool

// ValidateURL checks a subscriber URL: absolute http or https, a host, no credentials, within
// bounds, and not at a literal address refused says the guard refuses. A host name is resolved
// only at delivery, where the guard checks the address it resolves to.
func ValidateURL(raw string, refused RefusedAddress) error {
	if len(raw) > MaxURLBytes {
		return fault.Errorf(fault.Invalid, "url: longer than %d bytes: invalid", MaxURLBytes)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.Opaque != "" {
		return fault.Errorf(fault.Invalid, "url: %q is not an absolute http or https URL: invalid", raw)
	}
	if u.User != nil {
		return fault.New(fault.Invalid, "url: credentials in the URL are not allowed: invalid")
	}
	if u.Fragment != "" {
		return fault.New(fault.Invalid, "url: a fragment is not sent: invalid")
	}
	if a, err := netip.ParseAddr(u.Hostname()); err == nil && refused != nil && refused(a.Unmap()) {
		return fault.Errorf(fault.URLBlocked, "url: %s is an address this server does not send to", u.Hostname())
	}
	return nil
}

// ValidateState checks a state an admin sets: active or disabled (failing is the service's).
func ValidateState(s string) error {
	if s != StateActive && s != StateDisabled {
		return fault.Errorf(fault.Invalid, "state: %q: want %s or %s: invalid", s, StateActive, StateDisabled)
	}
	return nil
}

// ValidateID checks a subscription id as the service makes them ("wh_" and hex), so that an id
// no subscription can have is refused before a read.
func ValidateID(id string) error {
	rest, ok := strings.CutPrefix(id, "wh_")
	if !ok || len(rest) == 0 || len(rest) > 32 || strings.Trim(rest, "0123456789abcdef") != "" {
		return fault.Errorf(fault.NotFound, "webhook %q: not found", id)
	}
	return nil
}

// Config says how webhooks are delivered (webhooks.* in the configuration).
type Config struct {
	// PollInterval is how often each replica looks for subscriptions with changes to deliver,
	// besides being woken by local writes and other replicas' notices.
	PollInterval time.Duration
	// Timeout bounds one delivery (connect, send, answer).
	Timeout time.Duration
	// MinBackoff and MaxBackoff bound the wait before a failed delivery is retried: it doubles
	// from MinBackoff with each failure in a row, up to MaxBackoff.
	MinBackoff, MaxBackoff time.Duration
	// DisableAfter is how long a subscription may fail in a row before it is disabled.
	DisableAfter time.Duration
	// MaxPerTenant bounds the subscriptions of a tenant.
	MaxPerTenant int
	// KeepDeliveries is how many delivery records are kept per subscription (the newest).
	KeepDeliveries int
	// Lease is how long a replica holds a subscription while it delivers; renewed with each
	// delivery. A replica that stops holds it until it lapses; another one then takes over.
	Lease time.Duration
	// Concurrency bounds the subscriptions a replica delivers to at once.
	Concurrency int
}

// Defaults are the settings not configured.
var Defaults = Config{PollInterval: time.Second, Timeout: 10 * time.Second, MinBackoff: time.Second, MaxBackoff: 10 * time.Minute,
	DisableAfter: 72 * time.Hour, MaxPerTenant: 20, KeepDeliveries: 100, Lease: 30 * time.Second, Concurrency: 16}

// WithDefaults fills the zero settings with Defaults.
func (c Config) WithDefaults() Config {
	d := Defaults
	set := func(v *time.Duration, def time.Duration) {
		if *v <= 0 {
			*v = def
		}
	}
	set(&c.PollInterval, d.PollInterval)
	set(&c.Timeout, d.Timeout)
	set(&c.MinBackoff, d.MinBackoff)
	set(&c.MaxBackoff, d.MaxBackoff)
	set(&c.DisableAfter, d.DisableAfter)
	set(&c.Lease, d.Lease)
	if c.MaxBackoff < c.MinBackoff {
		c.MaxBackoff = c.MinBackoff
	}
	if c.Lease < 2*c.Timeout {
		// A delivery renews the lease as it begins; it must end before the lease does.
		c.Lease = 2 * c.Timeout
	}
	if c.MaxPerTenant <= 0 {
		c.MaxPerTenant = d.MaxPerTenant
	}
	if c.KeepDeliveries <= 0 {
		c.KeepDeliveries = d.KeepDeliveries
	}
	if c.Concurrency <= 0 {
		c.Concurrency = d.Concurrency
	}
	return c
}

// Backoff is the wait after failures failed attempts in a row.
func (c Config) Backoff(failures int) time.Duration {
	d := c.MinBackoff
	for i := 1; i < failures && d < c.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, c.MaxBackoff)
}
