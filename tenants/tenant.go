// Package tenants holds the Tenant entity: the unit of isolation that owns cards, roles and policies.
package tenants

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentcards/agentcards/authz"
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

// Errors returned by this package and by stores of tenants; test them with errors.Is.
var (
	ErrNotFound  = errors.New("not found")
	ErrExists    = errors.New("already exists")
	ErrInvalid   = errors.New("invalid")
	ErrSuspended = errors.New("tenant is suspended")
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
	// PolicyRevision counts changes to the tenant's roles and policies; the server owns it.
	PolicyRevision int64 `json:"-"`
}

// PolicyVersion is the version of the tenant's rules that checks made for this request must see.
func (t Tenant) PolicyVersion() authz.PolicyVersion {
	return authz.PolicyVersion{Epoch: t.CreatedAt.UnixMicro(), Revision: t.PolicyRevision}
}

// ValidateID reports whether id is a well-formed tenant slug.
func ValidateID(id ID) error {
	if !idPattern.MatchString(string(id)) {
		return fmt.Errorf("id %q must match [a-z0-9][a-z0-9-]{0,62}: %w", string(id), ErrInvalid)
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
		return fmt.Errorf("name is required: %w", ErrInvalid)
	}
	if utf8.RuneCountInString(name) > MaxNameLength {
		return fmt.Errorf("name is longer than %d characters: %w", MaxNameLength, ErrInvalid)
	}
	return nil
}

func validateStatus(s Status) error {
	switch s {
	case StatusActive, StatusSuspended:
		return nil
	}
	return fmt.Errorf("status %q must be active or suspended: %w", string(s), ErrInvalid)
}
