package delegation

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/tenants"
)

// Page limits of List.
const (
	DefaultLimit = 50
	MaxLimit     = 200
)

// seesAll reports whether the caller may read every delegation of the tenant: those who manage
// its policies, and those granted delegations:read on delegations/*.
func (x *Dispatcher) seesAll(ctx context.Context, tenant tenants.ID) (bool, error) {
	for _, c := range [][2]string{{authz.ObjPolicies, authz.ActPoliciesManage}, {"delegations/*", authz.ActDelegationsRead}} {
		err := x.d.Authz.Check(ctx, string(tenant), c[0], c[1])
		if err == nil {
			return true, nil
		}
		if !errors.Is(err, authz.ErrForbidden) {
			return false, err
		}
	}
	return false, nil
}

// Get returns one record to its caller, or to whoever may read the tenant's delegations; to
// anyone else it looks missing.
func (x *Dispatcher) Get(ctx context.Context, tenant tenants.ID, id string) (Delegation, error) {
	p, ok := authz.PrincipalFrom(ctx)
	if !ok {
		return Delegation{}, authz.ErrUnauthenticated
	}
	d, err := x.d.Store.Get(ctx, tenant, id)
	if err != nil {
		return Delegation{}, err
	}
	if d.Caller == p.Subject {
		return d, nil
	}
	if p.Delegated {
		// An agent reads only the delegations it made, whatever policies grant its subject.
		return Delegation{}, fmt.Errorf("delegation %q: %w", id, ErrNotFound)
	}
	err = x.d.Authz.Check(ctx, string(tenant), "delegations/"+id, authz.ActDelegationsRead)
	if err == nil {
		return d, nil
	}
	all, err := x.seesAll(ctx, tenant)
	if err != nil {
		return Delegation{}, err
	}
	if !all {
		return Delegation{}, fmt.Errorf("delegation %q: %w", id, ErrNotFound)
	}
	return d, nil
}

// List returns a page of records, newest first, and the cursor of the next page ("" at the end).
// A caller sees its own; those who may read all see all.
func (x *Dispatcher) List(ctx context.Context, tenant tenants.ID, f Filter) ([]Delegation, string, error) {
	p, ok := authz.PrincipalFrom(ctx)
	if !ok {
		return nil, "", authz.ErrUnauthenticated
	}
	if f.Status != "" && !validStatus(f.Status) {
		return nil, "", fmt.Errorf("status %q is not a delegation status: %w", f.Status, ErrInvalid)
	}
	if f.AgentID != "" {
		if err := cards.ValidateAgentID(f.AgentID); err != nil {
			return nil, "", fmt.Errorf("agentId: %w", ErrInvalid)
		}
	}
	if f.Limit <= 0 {
		f.Limit = DefaultLimit
	}
	f.Limit = min(f.Limit, MaxLimit)
	all := false
	if !p.Delegated {
		var err error
		if all, err = x.seesAll(ctx, tenant); err != nil {
			return nil, "", err
		}
	}
	if !all {
		f.Caller = p.Subject
	}
	limit := f.Limit
	f.Limit++
	list, err := x.d.Store.List(ctx, tenant, f)
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(list) > limit {
		list = list[:limit]
		next = list[limit-1].ID
	}
	return list, next, nil
}

// callbackBody is what an agent posts to the callback URL.
type callbackBody struct {
	Status Status          `json:"status"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// Complete records the result an agent posted for an async delegation. A wrong token looks like
// a missing delegation; a result for a delegation that already has its outcome is ErrConflict.
func (x *Dispatcher) Complete(ctx context.Context, tenant tenants.ID, id, token string, body []byte) error {
	notFound := fmt.Errorf("delegation %q: %w", id, ErrNotFound)
	if token == "" || tenants.ValidateID(tenant) != nil {
		return notFound
	}
	stored, err := x.d.Store.CallbackHash(ctx, tenant, id)
	if errors.Is(err, ErrNotFound) {
		return notFound
	}
	if err != nil {
		return err
	}
	sum := sha256.Sum256([]byte(token))
	if stored == "" || subtle.ConstantTimeCompare([]byte(stored), []byte(hex.EncodeToString(sum[:]))) != 1 {
		return notFound
	}
	if int64(len(body)) > x.cfg.MaxResultBytes {
		return fmt.Errorf("over %d bytes: %w", x.cfg.MaxResultBytes, ErrTooLarge)
	}
	var cb callbackBody
	if err := cards.DecodeStrict(body, &cb); err != nil {
		return fmt.Errorf("callback body: %w", ErrInvalid)
	}
	if cb.Status != StatusCompleted && cb.Status != StatusFailed {
		return fmt.Errorf("status %q must be completed or failed: %w", cb.Status, ErrInvalid)
	}
	d, err := x.d.Store.Get(ctx, tenant, id)
	if err != nil {
		return err
	}
	if d.Status.Terminal() {
		return fmt.Errorf("delegation %q is %s: %w", id, d.Status, ErrConflict)
	}
	now := x.now()
	out := Outcome{Status: cb.Status, Result: cb.Result, Error: errorText([]byte(cb.Error)), At: now,
		LatencyMS: now.Sub(d.CreatedAt).Milliseconds()}
	// An agent may post its result before the dispatcher has recorded its 202.
	return x.d.Store.Update(ctx, tenant, id, []Status{StatusPending, StatusRunning, StatusAccepted}, out)
}
