// Package tenants holds the Tenant entity: the unit of isolation that owns cards, roles and policies.
package tenants

import (
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/authz/fault"
)

// ID names a tenant. It is a slug so it can appear in URLs, casbin domains and log lines unescaped.
type ID string

// Status is whether a tenant's requests are served.
type Status string

// The statuses a tenant can be in. A suspended tenant keeps its data but every request is refused.
const (
	StatusActive    Status = "active"
	StatusSuspended Status = "suspended"
)

// Errors returned by this package and by stores of tenants; test them with errors.Is. Each is
// the kind of authz/fault it names, shared by every domain package: errors.Is does not tell a
// missing tenant from a missing card, and code that must tell them apart cannot ask it.
var (
	ErrNotFound  = fault.NotFound
	ErrExists    = fault.Conflict
	ErrInvalid   = fault.Invalid
	ErrSuspended = fault.Suspended
)

// MaxNameLength bounds a tenant's display name, in characters.
const MaxNameLength = 200

var idPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// Tenant is one isolated registry inside the service.
type Tenant struct {
	ID        ID        `json:"id"`
	Name      string    `json:"name"`
	Status    Status    `json:"status"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	// RefuseOfflineDelegation refuses delegations to cards whose agent is offline (409
	// agent_offline); without it they are sent, and their record says the card was offline.
	RefuseOfflineDelegation bool `json:"refuseOfflineDelegation,omitempty"`
	// HideDelegationTasks keeps the tenant's delegation records without the task text (for
	// tenants whose tasks are sensitive); without it, records keep delegation.recordTaskBytes of it.
	HideDelegationTasks bool `json:"hideDelegationTasks,omitempty"`
	// PolicyRevision counts changes to the tenant's roles and policies; the server owns it.
	PolicyRevision int64 `json:"-"`
	// Synonyms are the tenant's synonym sets, in id order; managed by the synonyms requests,
	// never by a tenant write.
	Synonyms []SynonymSet `json:"-"`
}

// PolicyVersion is the version of the tenant's rules that checks made for this request must see.
func (t Tenant) PolicyVersion() authz.PolicyVersion {
	return authz.PolicyVersion{Epoch: t.CreatedAt.UnixMicro(), Revision: t.PolicyRevision}
}

// ValidateID reports whether id is a well-formed tenant slug.
func ValidateID(id ID) error {
	if !idPattern.MatchString(string(id)) {
		return fault.Errorf(fault.Invalid, "id %q must match [a-z0-9][a-z0-9-]{0,62}: invalid", string(id))
	}
	return nil
}

// Validate checks every field a client can set.
func (t Tenant) Validate() error {
	if err := ValidateID(t.ID); err != nil {
		return err
	}
	if err := validateName(t.Name); err != nil {
		return err
	}
	return validateStatus(t.Status)
}

func validateName(name string) error {
	if strings.TrimSpace(name) == "" {
		return fault.New(fault.Invalid, "name is required: invalid")
	}
	if utf8.RuneCountInString(name) > MaxNameLength {
		return fault.Errorf(fault.Invalid, "name is longer than %d characters: invalid", MaxNameLength)
	}
	// Stored in a column of its own: Postgres text holds neither a NUL nor a byte that is not
	// UTF-8, and a control character in a name only garbles lists and logs.
	if !utf8.ValidString(name) || strings.IndexFunc(name, unicode.IsControl) >= 0 {
		return fault.New(fault.Invalid, "name must not contain control characters (such as NUL or a line break): invalid")
	}
	return nil
}

func validateStatus(s Status) error {
	switch s {
	case StatusActive, StatusSuspended:
		return nil
	}
	return fault.Errorf(fault.Invalid, "status %q must be active or suspended: invalid", string(s))
}
