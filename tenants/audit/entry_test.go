package audit_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/tenants/audit"
)

// TestNew: an entry's who and why come from the context: the service's job when it acts as one
// (its action, no request id, whatever else the context says), else the request's name and id,
// with the principal an agent proved to be, else the token's subject, else the service's own;
// fallback names the action when no request does.
func TestNew(t *testing.T) {
	token := caller("alice")
	req := authz.Request{Name: "cards.update", ID: "req-1", Write: true}
	for _, c := range []struct {
		name string
		ctx  context.Context
		want audit.Entry
	}{
		{"a request", authz.WithRequest(token, req),
			audit.Entry{Principal: "alice", Action: "cards.update", RequestID: "req-1"}},
		{"no request", token,
			audit.Entry{Principal: "alice", Action: "cards.replace"}},
		{"an agent's callback", authz.As(authz.WithRequest(token, authz.Request{Name: "delegations.complete", ID: "cb-1", Write: true}), "agent:rev"),
			audit.Entry{Principal: "agent:rev", Action: "delegations.complete", RequestID: "cb-1"}},
		{"a job", authz.AsJob(authz.As(authz.WithRequest(token, req), "agent:rev"), "refresh", "cards.refresh"),
			audit.Entry{Principal: "agentcards:refresh", Action: "cards.refresh"}},
		{"nobody", context.Background(),
			audit.Entry{Principal: "agentcards:service", Action: "cards.replace"}},
	} {
		got := audit.New(c.ctx, "cards.replace", audit.CardObject("rev"), 4, 5)
		want := c.want
		want.Object, want.RevisionBefore, want.RevisionAfter, want.Outcome = "cards/rev", 4, 5, "ok"
		if got != want {
			t.Errorf("%s: %+v, want %+v", c.name, got, want)
		}
	}
	for got, want := range map[string]string{
		audit.CardObject("rev"): "cards/rev", audit.SecretObject("rev"): "cards/rev/secret", audit.RoleObject("bob"): "roles/bob",
		audit.PolicyObject("role:editor"): "policies/role:editor", audit.DelegationObject("d-1"): "delegations/d-1",
		audit.TenantObject: "tenant", audit.JobPrefix: "agentcards:",
	} {
		if got != want {
			t.Errorf("%q, want %q", got, want)
		}
	}
}

// TestRefused: a check refused for a write request is recorded, denied, with who, the request,
// the object and (as detail) the action asked for; nothing is recorded for a read, outside a
// request, for a delegation (its rejected record has its own entry) or a heartbeat (not in the
// trail at all). A refusal that could not be recorded is logged, and stands either way.
func TestRefused(t *testing.T) {
	write := authz.WithRequest(caller("bob"), authz.Request{Name: "cards.update", ID: "req-1", Write: true})
	read := authz.WithRequest(caller("bob"), authz.Request{Name: "cards.get", ID: "req-2"})
	for _, c := range []struct {
		name     string
		ctx      context.Context
		obj, act string
		recorded bool
	}{
		{"a write", write, "cards/rev", authz.ActCardsWrite, true},
		{"a read", read, "cards/rev", authz.ActCardsRead, false},
		{"no request", caller("bob"), "cards/rev", authz.ActCardsWrite, false},
		{"a delegation", authz.WithRequest(caller("bob"), authz.Request{Name: "delegations.create", ID: "req-3", Write: true}),
			"cards/rev/capabilities/review", authz.ActDelegate, false},
		{"a heartbeat", authz.WithRequest(caller("bob"), authz.Request{Name: "cards.heartbeat", ID: "req-4", Write: true}),
			"cards/rev", authz.ActCardsHeartbeat, false},
	} {
		s := &memStore{}
		(&audit.Service{Store: s}).Refused(c.ctx, "acme", c.obj, c.act)
		switch {
		case !c.recorded && len(s.refused) != 0:
			t.Errorf("%s: recorded %+v", c.name, s.refused)
		case c.recorded && len(s.refused) != 1:
			t.Errorf("%s: %d recorded, want 1", c.name, len(s.refused))
		case c.recorded:
			want := refusal{"acme", audit.Entry{Principal: "bob", Action: "cards.update", RequestID: "req-1", Object: "cards/rev",
				Detail: "cards:write", Outcome: "denied"}}
			if s.refused[0] != want {
				t.Errorf("%s: recorded %+v, want %+v", c.name, s.refused[0], want)
			}
		}
	}

	var logged bytes.Buffer
	s := &memStore{err: errors.New("disk full")}
	(&audit.Service{Store: s, Log: slog.New(slog.NewTextHandler(&logged, nil))}).Refused(write, "acme", "cards/rev", authz.ActCardsWrite)
	for _, part := range []string{"level=WARN", "could not record a refused write", "tenant=acme", "object=cards/rev", "action=cards:write", `err="disk full"`} {
		if !strings.Contains(logged.String(), part) {
			t.Errorf("the log %q has no %s", logged.String(), part)
		}
	}
	(&audit.Service{Store: s}).Refused(write, "acme", "cards/rev", authz.ActCardsWrite) // no log: nothing to tell, no panic
	if len(s.refused) != 2 {
		t.Errorf("%d refusals handed to the store, want 2", len(s.refused))
	}
}
