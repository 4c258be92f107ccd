// Package delegation sends a task to an agent on behalf of a caller, once the tenant's policy
// allows it: the record of each delegation, the Dispatcher that calls agent endpoints (POST /task
// or A2A) under the server's guards, and the Store it needs.
package delegation

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/tenants"
)

// Errors of this package and of delegation stores; test them with errors.Is. Each is the kind of
// authz/fault it names, shared by every domain package (ErrNotFound is a card's too).
var (
	ErrNotFound = fault.NotFound
	ErrInvalid  = fault.Invalid
	// ErrConflict: a result arrived for a delegation that already has its outcome.
	ErrConflict = fault.Conflict
	// ErrTooLarge: a result over the configured size limit.
	ErrTooLarge = fault.TooLarge
	// ErrDepthExceeded: the delegation chain would grow past the configured maximum.
	ErrDepthExceeded = fault.DepthExceeded
	// ErrBlocked: the agent's endpoint resolves to an address the outbound guard refuses.
	ErrBlocked = fault.EndpointBlocked
	// ErrAgentUnavailable: the endpoint's circuit breaker is open; nothing was sent.
	ErrAgentUnavailable = fault.AgentUnavailable
	// ErrRateLimited: the tenant sent more delegations than its rate allows.
	ErrRateLimited = fault.RateLimited
	// ErrExpired: a result arrived after the delegation's deadline.
	ErrExpired = fault.Expired
	// ErrClosed: the server is shutting down and takes no new async delegation.
	ErrClosed = fault.Unavailable
)

// Status is where a delegation stands.
type Status string

// The statuses. Rejected: the server refused to send it (policy, depth, guard, breaker).
const (
	StatusPending   Status = "pending"
	StatusRunning   Status = "running"
	StatusAccepted  Status = "accepted"
	StatusCompleted Status = "completed"
	StatusFailed    Status = "failed"
	StatusTimeout   Status = "timeout"
	StatusRejected  Status = "rejected"
)

// Terminal reports whether s is an outcome that never changes again.
func (s Status) Terminal() bool {
	switch s {
	case StatusCompleted, StatusFailed, StatusTimeout, StatusRejected:
		return true
	}
	return false
}

func validStatus(s Status) bool {
	return s.Terminal() || s == StatusPending || s == StatusRunning || s == StatusAccepted
}

// Mode says whether the caller waits for the outcome.
type Mode string

// The modes: sync answers with the outcome, async answers at once with the delegation id.
const (
	ModeSync  Mode = "sync"
	ModeAsync Mode = "async"
)

// The transports: the agentkit-mesh POST /task contract, or an A2A SendMessage.
const (
	TransportHTTP = "http"
	TransportA2A  = "a2a"
)

// Request is what a caller asks for.
type Request struct {
	AgentID    string          `json:"agentId"`
	Capability string          `json:"capability"`
	Task       string          `json:"task"`
	Context    json.RawMessage `json:"context,omitempty"`
	Mode       Mode            `json:"mode"`
	TimeoutMS  int64           `json:"timeoutMs,omitempty"`
	Transport  string          `json:"transport,omitempty"`
}

// MaxTaskBytes bounds the task text.
const MaxTaskBytes = 64 << 10

func (r *Request) normalize() error {
	if r.Mode == "" {
		r.Mode = ModeSync
	}
	if r.Transport == "" {
		r.Transport = TransportHTTP
	}
	switch {
	case r.Capability == "":
		return fault.New(fault.Invalid, "capability is required: invalid")
	case r.Task == "":
		return fault.New(fault.Invalid, "task is required: invalid")
	case len(r.Task) > MaxTaskBytes:
		return fault.Errorf(fault.Invalid, "task is over %d bytes: invalid", MaxTaskBytes)
	case r.Mode != ModeSync && r.Mode != ModeAsync:
		return fault.Errorf(fault.Invalid, "mode %q must be sync or async: invalid", r.Mode)
	case r.Transport != TransportHTTP && r.Transport != TransportA2A:
		return fault.Errorf(fault.Invalid, "transport %q must be http or a2a: invalid", r.Transport)
	case r.TimeoutMS < 0:
		return fault.New(fault.Invalid, "timeoutMs must not be negative: invalid")
	}
	return nil
}

// Delegation is the record of one delegation.
type Delegation struct {
	ID         string          `json:"id"`
	Caller     string          `json:"caller"`
	AgentID    string          `json:"agentId"`
	Capability string          `json:"capability"`
	Mode       Mode            `json:"mode"`
	Transport  string          `json:"transport"`
	Depth      int             `json:"depth"`
	Status     Status          `json:"status"`
	Result     json.RawMessage `json:"result,omitempty"`
	Error      string          `json:"error,omitempty"`
	LatencyMS  int64           `json:"latencyMs"`
	CreatedAt  time.Time       `json:"createdAt"`
	UpdatedAt  time.Time       `json:"updatedAt"`
	// Deadline is CreatedAt plus the delegation's timeout: no result is taken after it, and a
	// delegation without its outcome by then is reported as timeout. Zero for refused ones.
	Deadline time.Time `json:"deadline,omitzero"`
	// A2A is the interface an a2a delegation was sent to (its binding and the version spoken),
	// chosen from the card when the delegation was made; zero, and not shown, for http.
	A2A Interface `json:"a2a,omitzero"`
	// AgentLiveness is the card's liveness when the delegation was made: a delegation to an
	// agent offline or never heard from is sent all the same, and its record says so. Empty when
	// the server could not tell.
	AgentLiveness cards.LivenessState `json:"agentLiveness,omitempty" enum:"online,offline,unknown"`
	// Attempts is how many tries a rejected record stands for, when more than one: a caller
	// refused again in the same way within RepeatWindow bumps its record instead of adding one.
	Attempts int `json:"attempts,omitempty"`
	// Task is the task as the caller sent it, its first Config.RecordTaskBytes bytes (cut at a
	// character's start; TaskTruncated then; a NUL as U+FFFD). Empty when none is kept: a
	// delegation refused before it was sent, a server with delegation.recordTask off, a tenant
	// that hides its tasks.
	Task          string `json:"task,omitempty"`
	TaskTruncated bool   `json:"taskTruncated,omitempty"`
	// Imported names the registry the record was imported from (Import), such as
	// agentkit-mesh; empty for the delegations the service made.
	Imported string `json:"imported,omitempty"`
}

// expired reports whether d waits for an outcome past its deadline.
func (d Delegation) expired(now time.Time) bool {
	return !d.Status.Terminal() && !d.Deadline.IsZero() && now.After(d.Deadline)
}

// Outcome is a change of a delegation's status, with what came with it.
type Outcome struct {
	Status    Status
	Result    json.RawMessage
	Error     string
	LatencyMS int64
	At        time.Time
}

// storable is o as a record keeps it: a NUL in its error as U+FFFD (as in a recorded task), and
// its error and result in valid UTF-8 (cards.ValidUTF8). Agents write both; Postgres text holds
// neither a NUL nor a byte that is not UTF-8, MySQL's no such byte, and this way every database
// keeps the same record.
func (o Outcome) storable() Outcome {
	o.Error = strings.ToValidUTF8(strings.ReplaceAll(o.Error, "\x00", "\uFFFD"), "\uFFFD")
	o.Result = cards.ValidUTF8(o.Result)
	return o
}

// Filter selects delegation records; empty fields select everything. Callers of List set Status
// and AgentID; List sets the rest from the caller and the page for the Store.
type Filter struct {
	// Caller restricts the list to one caller's delegations.
	Caller  string
	Status  Status
	AgentID string
	// Before is where the page starts: the id of the record before it. Only records older than
	// that one are returned, in the order List gives them (createdAt, then id).
	Before string
	Limit  int
}

// Store keeps delegation records, each scoped to its tenant.
type Store interface {
	// Create inserts a record; callbackHash is the hex SHA-256 of its callback token, or "".
	Create(ctx context.Context, tenant tenants.ID, d Delegation, callbackHash string) error
	Get(ctx context.Context, tenant tenants.ID, id string) (Delegation, error)
	// CallbackHash returns the stored hash of the record's callback token ("" if it has none).
	CallbackHash(ctx context.Context, tenant tenants.ID, id string) (string, error)
	// Update applies o if the record's status is one of from: ErrConflict if it is not,
	// ErrNotFound if there is no record.
	Update(ctx context.Context, tenant tenants.ID, id string, from []Status, o Outcome) error
	// List returns the records that f selects, newest first: by createdAt, then by id.
	// A Before that names no record of the tenant is paging.ErrCursor.
	List(ctx context.Context, tenant tenants.ID, f Filter) ([]Delegation, error)
	// Import inserts those of ds whose ids the tenant does not have yet, all or none, with an
	// audit entry each, and returns the ids it had already, whose records stay as they are.
	Import(ctx context.Context, tenant tenants.ID, ds []Delegation) (existing []string, err error)
	// RepeatRejected counts the refusal d into the caller's newest record if that is the same
	// refusal, last tried at or after since, and returns it; false when there is none such.
	RepeatRejected(ctx context.Context, tenant tenants.ID, d Delegation, since time.Time) (Delegation, bool, error)
}
