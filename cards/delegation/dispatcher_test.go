package delegation_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/authz/authztest"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/agenttest"
	"github.com/agentcards/agentcards/cards/delegation"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/web/webtest"
)

// secretsFunc lets a test decide how the endpoint-secret read behaves.
type secretsFunc func(ctx context.Context) (string, error)

func (f secretsFunc) Secret(ctx context.Context, _ tenants.ID, _, _ string) (delegation.Credential, error) {
	v, err := f(ctx)
	return delegation.Credential{Value: v}, err
}

// dispatcherFixture is a dispatcher over a real SQLite store, with one card whose endpoint is
// an agent.
type dispatcherFixture struct {
	x *delegation.Dispatcher
	// tenants is the dispatcher's tenant gate, over the same database.
	tenants *tenants.Service
	log     *webtest.LogBuffer
	// agent is the agent newDispatcherFixture starts. newDispatcherFixtureAt starts none and
	// leaves it nil: its tests ask the agent they started.
	agent *agenttest.Agent
	ctx   context.Context
}

// newDispatcherFixture is newDispatcherFixtureAt with the card's endpoint at a loopback agent
// that answers every call with a result, and counts them.
func newDispatcherFixture(t *testing.T, cfg delegation.Config, secrets delegation.Secrets) dispatcherFixture {
	t.Helper()
	a := agenttest.New(t, agenttest.Answer(http.StatusOK, `{"result": "done"}`))
	f := newDispatcherFixtureAt(t, cfg, secrets, a.Endpoint())
	f.agent = a
	return f
}

// newDispatcherFixtureAt builds the fixture with the card's endpoint at endpoint.
func newDispatcherFixtureAt(t *testing.T, cfg delegation.Config, secrets delegation.Secrets, endpoint string) dispatcherFixture {
	t.Helper()
	db := storagetest.Open(t, "sqlite")
	ctx := context.Background()
	storagetest.CreateTenant(t, db, "acme", time.Now(), "alice")
	cardStore := storage.NewCardStore(db)
	now := time.Now().UTC()
	card := cards.Card{AgentID: "agt1", Name: "Agent", Protocols: []string{"http"}, Endpoint: endpoint,
		Capabilities: []cards.Capability{{Name: "review_pr"}}, Visibility: cards.VisibilityTenant,
		ID: "5b0f7c1e-0000-4000-8000-000000000001", Revision: 1, CreatedAt: now, UpdatedAt: now}
	if _, err := cardStore.Create(ctx, "acme", card); err != nil {
		t.Fatal(err)
	}
	keys := webtest.ServiceKeys(t)
	log := &webtest.LogBuffer{}
	gate := &tenants.Service{Store: storage.NewTenantStore(db)}
	x := delegation.NewDispatcher(cfg, delegation.Deps{
		Store: storage.NewDelegationStore(db), Cards: cardStore, Authz: authztest.AllowAll{},
		Gate: gate,
		Doer: http.DefaultClient, Signer: keys, Secrets: secrets,
		Log: slog.New(slog.NewTextHandler(log, nil)),
	})
	t.Cleanup(x.Wait)
	pctx := authz.WithPrincipal(ctx, authz.Principal{Subject: "olga", Tenant: "acme"})
	return dispatcherFixture{x: x, tenants: gate, log: log, ctx: pctx}
}

// TestDelegationDeadlineDuringSecretRead: when the call's deadline ends while the server is
// still reading the endpoint secret, the delegation timed out: it is recorded timeout, the
// caller gets the record (no error), nothing is logged as our failure, and the endpoint's
// breaker does not count it. The read is made slow on purpose (it returns only when its context
// ends), so the outcome does not depend on how fast the machine is.
func TestDelegationDeadlineDuringSecretRead(t *testing.T) {
	slow := secretsFunc(func(ctx context.Context) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	})
	// One counted failure would open the breaker; the default timeout is what these calls get.
	f := newDispatcherFixture(t, delegation.Config{BreakerFailures: 1, DefaultTimeout: 50 * time.Millisecond}, slow)
	req := delegation.Request{AgentID: "agt1", Capability: "review_pr", Task: "review", Mode: delegation.ModeSync}
	for i := range 3 {
		d, err := f.x.Delegate(f.ctx, "acme", req, nil)
		if err != nil {
			t.Fatalf("delegation %d: error %v, want the timed-out record", i, err)
		}
		if d.Status != delegation.StatusTimeout || !strings.Contains(d.Error, "no answer within 50ms") {
			t.Fatalf("delegation %d: %+v, want status timeout", i, d)
		}
	}
	if n := f.agent.Calls(); n != 0 {
		t.Fatalf("the agent was called %d times although no call could be prepared in time", n)
	}
	if strings.Contains(f.log.String(), "level=ERROR") {
		t.Fatalf("a timeout was logged as the server's failure:\n%s", f.log.String())
	}
}

// TestDelegationSecretReadFails: a secret that cannot be read for a reason of our own (not the
// deadline) is a local failure: recorded rejected without the cause, the cause logged, and the
// caller gets an error (which the API answers with an opaque 500); the agent is never called.
func TestDelegationSecretReadFails(t *testing.T) {
	broken := secretsFunc(func(context.Context) (string, error) {
		return "", errors.New("sealed secret will not open")
	})
	f := newDispatcherFixture(t, delegation.Config{}, broken)
	req := delegation.Request{AgentID: "agt1", Capability: "review_pr", Task: "review", Mode: delegation.ModeSync}
	d, err := f.x.Delegate(f.ctx, "acme", req, nil)
	if err == nil || d.Status != delegation.StatusRejected || strings.Contains(d.Error, "will not open") {
		t.Fatalf("got %+v, %v; want a rejected record that hides the cause, and an error", d, err)
	}
	if !strings.Contains(f.log.String(), "level=ERROR") || !strings.Contains(f.log.String(), "will not open") {
		t.Fatalf("the cause was not logged:\n%s", f.log.String())
	}
	if n := f.agent.Calls(); n != 0 {
		t.Fatalf("the agent was called %d times", n)
	}
}

// TestDelegationUnreachableAgent: an agent nobody answers at (connection refused) is a failed
// delegation that says so, found at once: not a timeout, which would blame the caller's patience.
func TestDelegationUnreachableAgent(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String() + "/task"
	_ = ln.Close() // nothing listens there any more
	f := newDispatcherFixtureAt(t, delegation.Config{DefaultTimeout: time.Minute}, nil, closed)
	req := delegation.Request{AgentID: "agt1", Capability: "review_pr", Task: "review", Mode: delegation.ModeSync}
	d, err := f.x.Delegate(f.ctx, "acme", req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Status != delegation.StatusFailed || d.Error != "the agent could not be reached" {
		t.Fatalf("got %+v, want failed: the agent could not be reached", d)
	}
	if d.LatencyMS > 30_000 {
		t.Fatalf("a refused connection took %d ms to be noticed", d.LatencyMS)
	}
}
