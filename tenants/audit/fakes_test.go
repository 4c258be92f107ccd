package audit_test

import (
	"context"
	"time"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/tenants/audit"
)

// The fakes stand for the service's collaborators where the point is the service's own logic:
// what it asks of them, and what it does with their answers.

// memStore is a trail in memory: entries newest first, listed as the store's contract says
// (Before and Limit; the other filters are the real stores' to apply, see storage). It keeps
// the filters and the contexts it was asked with, and the refusals it was given.
type memStore struct {
	entries []audit.Entry // newest first
	err     error
	asked   []audit.Filter
	ctxs    []context.Context
	refused []refusal
}

type refusal struct {
	tenant tenants.ID
	entry  audit.Entry
}

func (s *memStore) List(ctx context.Context, _ tenants.ID, f audit.Filter) ([]audit.Entry, error) {
	s.asked, s.ctxs = append(s.asked, f), append(s.ctxs, ctx)
	if s.err != nil {
		return nil, s.err
	}
	var out []audit.Entry
	for _, e := range s.entries {
		if (f.Before == 0 || e.Seq < f.Before) && (f.Limit == 0 || len(out) < f.Limit) {
			out = append(out, e)
		}
	}
	return out, nil
}

func (s *memStore) Refused(_ context.Context, tenant tenants.ID, e audit.Entry) error {
	s.refused = append(s.refused, refusal{tenant, e})
	return s.err
}

func (s *memStore) Prune(context.Context, time.Time) (int64, error) { return 0, nil }

// gate admits into the tenants it names, marking the context it returns; err refuses.
type gate struct {
	err     error
	entered []string
}

type enteredKey struct{}

func (g *gate) Enter(ctx context.Context, tenant string) (context.Context, error) {
	g.entered = append(g.entered, tenant)
	if g.err != nil {
		return ctx, g.err
	}
	return context.WithValue(ctx, enteredKey{}, tenant), nil
}

// checks answers each (object, action) as answers says (nil: allowed), and keeps what it was asked
// and whether the context had passed the gate.
type checks struct {
	answers map[string]error // by "object action"
	asked   []string         // "tenant object action entered"
}

func (p *checks) Check(ctx context.Context, tenant, obj, act string) error {
	entered, _ := ctx.Value(enteredKey{}).(string)
	p.asked = append(p.asked, tenant+" "+obj+" "+act+" "+entered)
	return p.answers[obj+" "+act]
}

// caller is the context of subject in tenant acme, with a token of its own.
func caller(subject string) context.Context {
	return authz.WithPrincipal(context.Background(), authz.Principal{Subject: subject, Tenant: "acme"})
}
