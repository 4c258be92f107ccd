package delegation

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/tenants/paging"
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

// settle reports a record still waiting past its deadline as timeout, and records that, so a
// delegation whose agent never calls back does not stay accepted forever. If an outcome was
// recorded meanwhile, that one is returned.
func (x *Dispatcher) settle(ctx context.Context, tenant tenants.ID, d Delegation) (Delegation, error) {
	now := x.now()
	if !d.expired(now) {
		return d, nil
	}
	out := Outcome{Status: StatusTimeout, Error: "no result before the deadline", At: now,
		LatencyMS: d.Deadline.Sub(d.CreatedAt).Milliseconds()}
	// Whoever's read found it late, the service records the timeout.
	ctx = authz.AsJob(ctx, "expire", "delegations.expire")
	err := x.d.Store.Update(ctx, tenant, d.ID, []Status{StatusPending, StatusRunning, StatusAccepted}, out)
	if errors.Is(err, ErrConflict) {
		return x.d.Store.Get(ctx, tenant, d.ID)
	}
	if err != nil {
		return Delegation{}, err
	}
	x.observe(d.Transport, out.Status)
	d.Status, d.Result, d.Error, d.LatencyMS, d.UpdatedAt = out.Status, nil, out.Error, out.LatencyMS, out.At
	return d, nil
}

// wellFormedID reports whether id has the form of a delegation id: a UUID as NewID writes it
// (36 characters, lowercase hexadecimal digits in groups of 8-4-4-4-12). Any other id is
// answered as a missing delegation without a query: none can have it, and the databases differ
// over ids they cannot store (Postgres refuses a NUL or a byte that is not UTF-8 in a query, where
// the others find nothing).
func wellFormedID(id string) bool {
	if len(id) != 36 {
		return false
	}
	for i := range len(id) {
		switch c := id[i]; i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
				return false
			}
		}
	}
	return true
}

// Get returns one record to its caller, or to whoever may read the tenant's delegations; to
// anyone else it looks missing.
func (x *Dispatcher) Get(ctx context.Context, tenant tenants.ID, id string) (Delegation, error) {
	ctx, p, err := x.enter(ctx, tenant)
	if err != nil {
		return Delegation{}, err
	}
	if !wellFormedID(id) {
		return Delegation{}, fault.Errorf(fault.NotFound, "delegation %q: not found", id)
	}
	d, err := x.d.Store.Get(ctx, tenant, id)
	if err != nil {
		return Delegation{}, err
	}
	if d.Caller == p.Subject {
		return x.settle(ctx, tenant, d)
	}
	if p.Delegated {
		// An agent reads only the delegations it made, whatever policies grant its subject.
		return Delegation{}, fault.Errorf(fault.NotFound, "delegation %q: not found", id)
	}
	err = x.d.Authz.Check(ctx, string(tenant), "delegations/"+id, authz.ActDelegationsRead)
	if err == nil {
		return x.settle(ctx, tenant, d)
	}
	all, err := x.seesAll(ctx, tenant)
	if err != nil {
		return Delegation{}, err
	}
	if !all {
		return Delegation{}, fault.Errorf(fault.NotFound, "delegation %q: not found", id)
	}
	return x.settle(ctx, tenant, d)
}

// delegationsList names the cursors of the delegation list to the codec.
const delegationsList = "delegations"

// List returns a page of the records f selects, newest first, and the cursor of the next page
// ("" at the end). A caller sees its own; those who may read all see all.
func (x *Dispatcher) List(ctx context.Context, tenant tenants.ID, f Filter, page paging.Page) ([]Delegation, string, error) {
	ctx, p, err := x.enter(ctx, tenant)
	if err != nil {
		return nil, "", err
	}
	if f.Status != "" && !validStatus(f.Status) {
		return nil, "", fault.Errorf(fault.Invalid, "status %q is not a delegation status: invalid", f.Status)
	}
	if f.AgentID != "" {
		if err := cards.ValidateAgentID(f.AgentID); err != nil {
			return nil, "", fault.New(fault.Invalid, "agentId: invalid")
		}
	}
	if f.Limit, err = page.Check(DefaultLimit, MaxLimit); err != nil {
		return nil, "", err
	}
	f.Before = ""
	if page.Cursor != "" {
		if err := paging.DecodeCursor(delegationsList, page.Cursor, &f.Before); err != nil {
			return nil, "", err
		}
		if !wellFormedID(f.Before) {
			return nil, "", paging.ErrCursor
		}
	}
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
		next = paging.EncodeCursor(delegationsList, list[limit-1].ID)
	}
	for i := range list {
		if list[i], err = x.settle(ctx, tenant, list[i]); err != nil {
			return nil, "", err
		}
	}
	return list, next, nil
}

// callbackBody is what an agent posts to the callback URL.
type callbackBody struct {
	Status Status          `json:"status"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// callbackShape makes each member of a callback body (its result) a value of its own, whose
// nesting is bounded (cards.CheckDepth).
var callbackShape = cards.Shape{}

// Complete records the result an agent posted for an async delegation. A wrong token looks like
// a missing delegation; a result for a delegation that already has its outcome is ErrConflict,
// one after the delegation's deadline ErrExpired (and the delegation a timeout).
func (x *Dispatcher) Complete(ctx context.Context, tenant tenants.ID, id, token string, body []byte) error {
	notFound := fault.Errorf(fault.NotFound, "delegation %q: not found", id)
	if token == "" || tenants.ValidateID(tenant) != nil || !wellFormedID(id) {
		return notFound
	}
	// A suspended tenant refuses every request, its agents' results too: the delegation then
	// times out as if the agent never answered.
	ctx, err := x.d.Gate.EnterPublished(ctx, string(tenant))
	if errors.Is(err, tenants.ErrNotFound) {
		return notFound
	}
	if err != nil {
		return err
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
	return x.complete(ctx, tenant, id, body, true)
}

// CompleteAs records the result of an async delegation posted by the caller in ctx instead of by
// the callback's token, as agentkit-mesh's agents post to its control plane: the agent the task
// went to (its delegation token, or the subject agent:{agentId}), or whoever may write that
// agent's card (cards:write on it: the one who registered it). Anyone else finds no delegation.
func (x *Dispatcher) CompleteAs(ctx context.Context, tenant tenants.ID, id string, body []byte) error {
	ctx, p, err := x.enter(ctx, tenant)
	if err != nil {
		return err
	}
	notFound := fault.Errorf(fault.NotFound, "delegation %q: not found", id)
	if !wellFormedID(id) {
		return notFound
	}
	d, err := x.d.Store.Get(ctx, tenant, id)
	if err != nil {
		return err
	}
	if p.Subject != authz.AgentSubject(d.AgentID) {
		if p.Delegated {
			return notFound
		}
		err := x.d.Authz.Check(ctx, string(tenant), "cards/"+d.AgentID, authz.ActCardsWrite)
		if errors.Is(err, authz.ErrForbidden) {
			return notFound
		}
		if err != nil {
			return err
		}
	}
	if d.Mode != ModeAsync {
		return fault.Errorf(fault.Conflict, "delegation %q is sync: its outcome is the agent's answer: delegation already finished", id)
	}
	return x.complete(ctx, tenant, id, body, false)
}

// complete records a result whose sender has been admitted: by the callback's token, which
// proves the sender is the agent, or as the caller in ctx.
func (x *Dispatcher) complete(ctx context.Context, tenant tenants.ID, id string, body []byte, byToken bool) error {
	if int64(len(body)) > x.cfg.MaxResultBytes {
		return fault.Errorf(fault.TooLarge, "over %d bytes: result is too large", x.cfg.MaxResultBytes)
	}
	if err := cards.CheckDepth(body, "", callbackShape, x.cfg.MaxJSONDepth); err != nil {
		return err
	}
	var cb callbackBody
	if err := cards.DecodeStrict(body, &cb); err != nil {
		return fault.New(fault.Invalid, "callback body: invalid")
	}
	if cb.Status != StatusCompleted && cb.Status != StatusFailed {
		return fault.Errorf(fault.Invalid, "status %q must be completed or failed: invalid", cb.Status)
	}
	d, err := x.d.Store.Get(ctx, tenant, id)
	if err != nil {
		return err
	}
	if byToken {
		// The token proved the caller is the agent the task went to: its writes are the agent's.
		ctx = authz.As(ctx, authz.AgentSubject(d.AgentID))
	}
	if d.Status.Terminal() && d.Status != StatusTimeout {
		return fault.Errorf(fault.Conflict, "delegation %q is %s: delegation already finished", id, d.Status)
	}
	now := x.now()
	if d.Status == StatusTimeout || d.expired(now) {
		if _, err := x.settle(ctx, tenant, d); err != nil {
			return err
		}
		return fault.Errorf(fault.Expired, "delegation %q: its deadline %s has passed: delegation deadline passed", id, d.Deadline.Format(time.RFC3339))
	}
	out := Outcome{Status: cb.Status, Result: cb.Result, Error: errorText([]byte(cb.Error)), At: now,
		LatencyMS: now.Sub(d.CreatedAt).Milliseconds()}.storable()
	// An agent may post its result before the dispatcher has recorded its 202.
	if err := x.d.Store.Update(ctx, tenant, id, []Status{StatusPending, StatusRunning, StatusAccepted}, out); err != nil {
		return err
	}
	x.observe(d.Transport, out.Status)
	return nil
}
