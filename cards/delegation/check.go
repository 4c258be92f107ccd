package delegation

import (
	"context"
	"errors"
	"slices"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/tenants"
)

// check admits the caller and checks the request against the card, the policy and the server's
// limits, and returns the tenant's context and the call to make. A refusal that refusal finds is
// recorded (reject), and check returns that record with it; any other error leaves no record and
// comes with a zero Delegation.
func (x *Dispatcher) check(ctx context.Context, tenant tenants.ID, req Request) (context.Context, call, Delegation, error) {
	ctx, c, card, err := x.prepare(ctx, tenant, req)
	if err != nil {
		return ctx, call{}, Delegation{}, err
	}
	cause, err := x.refusal(ctx, &c, card)
	if err != nil {
		return ctx, call{}, Delegation{}, err
	}
	if cause != nil {
		rejected, err := x.reject(ctx, tenant, c.d, cause)
		return ctx, call{}, rejected, err
	}
	return ctx, c, Delegation{}, nil
}

// prepare admits the caller, checks the request, and checks that its card exists, declares the
// capability and can be called with the transport; it returns the call with its record (not yet
// stored) and the card. Its errors leave no record.
func (x *Dispatcher) prepare(ctx context.Context, tenant tenants.ID, req Request) (context.Context, call, cards.Card, error) {
	ctx, p, err := x.enter(ctx, tenant)
	if err != nil {
		return ctx, call{}, cards.Card{}, err
	}
	if err := req.normalize(); err != nil {
		return ctx, call{}, cards.Card{}, err
	}
	if err := cards.CheckDepth(req.Context, "context", nil, x.cfg.MaxJSONDepth); err != nil {
		return ctx, call{}, cards.Card{}, err
	}
	if err := cards.ValidateAgentID(req.AgentID); err != nil {
		return ctx, call{}, cards.Card{}, fault.Errorf(fault.NotFound, "card %q: not found", req.AgentID)
	}
	card, err := x.d.Cards.Get(ctx, tenant, req.AgentID)
	if err != nil {
		return ctx, call{}, cards.Card{}, err
	}
	if !slices.ContainsFunc(card.Capabilities, func(c cards.Capability) bool { return c.Name == req.Capability }) {
		return ctx, call{}, cards.Card{}, fault.Errorf(fault.Invalid, "card %q declares no capability %q: invalid", req.AgentID, req.Capability)
	}
	target, err := targetOf(card, req.Transport)
	if err != nil {
		return ctx, call{}, cards.Card{}, err
	}
	now := x.now()
	d := Delegation{
		ID: x.d.NewID(), Caller: p.Subject, AgentID: req.AgentID, Capability: req.Capability,
		Mode: req.Mode, Transport: req.Transport, A2A: target.iface, Depth: p.Depth + 1, CreatedAt: now, UpdatedAt: now,
	}
	return ctx, call{tenant: tenant, d: d, req: req, target: target}, card, nil
}

// refusal asks, in this order, the policy, the card's status, the agent's liveness (where the
// tenant refuses offline agents), the chain's depth and the tenant's rate whether the call may go
// out. It returns the first refusal as cause, which the record keeps, or as err a failure to ask
// the policy, which it does not. It sets the agent's liveness on the call's record.
func (x *Dispatcher) refusal(ctx context.Context, c *call, card cards.Card) (cause, err error) {
	tenant, d := c.tenant, &c.d
	obj := authz.CardObject(d.AgentID) + "/capabilities/" + d.Capability
	if err := x.d.Authz.Check(ctx, string(tenant), obj, authz.ActDelegate); err != nil {
		if errors.Is(err, authz.ErrForbidden) {
			return err, nil
		}
		return nil, err
	}
	if x.d.Liveness != nil {
		// Read once the caller may delegate to the card (a refusal's record says nothing of it).
		// Recorded, not enforced; a liveness that cannot be read leaves the record without it.
		if l, err := x.d.Liveness.Of(ctx, tenant, card.AgentID, card.ID); err == nil {
			d.AgentLiveness = l.State
		}
	}
	if card.Disabled() {
		// Told only to a caller allowed to delegate to it, who may know the card's status.
		return fault.Errorf(fault.CardDisabled, "card %q is disabled: not delegated to", d.AgentID), nil
	}
	if d.AgentLiveness == cards.Offline && x.d.Tenants != nil {
		if t, err := x.d.Tenants.Active(ctx, tenant); err == nil && t.RefuseOfflineDelegation {
			return fault.Errorf(fault.AgentOffline, "card %q is offline, and tenant %q refuses delegations to offline agents: not delegated to", d.AgentID, string(tenant)), nil
		}
	}
	if d.Depth > x.cfg.MaxDepth {
		return fault.Errorf(fault.DepthExceeded, "depth %d is over the maximum of %d: delegation chain too deep", d.Depth, x.cfg.MaxDepth), nil
	}
	// The rate is spent only by delegations that would otherwise go out, so refused attempts
	// cannot use up a tenant's budget.
	if !x.limiters.allow(string(tenant), d.CreatedAt) {
		return fault.Errorf(fault.RateLimited, "tenant %q: too many delegations", string(tenant)), nil
	}
	return nil, nil
}
