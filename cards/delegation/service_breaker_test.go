package delegation_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentcards/agentcards/cards/agenttest"
	"github.com/agentcards/agentcards/cards/delegation"
	"github.com/agentcards/agentcards/web/outbound"
)

// answered is the agent's answer with status: a JSON body that names it.
func answered(status int) agenttest.Reply {
	return agenttest.Answer(status, fmt.Sprintf(`{"result": "answered %d"}`, status))
}

// breakerOpen delegates until the breaker lets a call through again (the cooldown ended): it
// returns that call, and checks each refusal on the way was recorded rejected without reaching
// the agent.
func breakerOpen(t *testing.T, f dispatcherFixture, a *agenttest.Agent) (delegation.Delegation, error) {
	t.Helper()
	var d delegation.Delegation
	var err error
	eventually(t, "the breaker's cooldown", func() bool {
		before := a.Calls()
		d, err = f.x.Delegate(f.ctx, "acme", syncReview(), nil)
		if !errors.Is(err, delegation.ErrAgentUnavailable) {
			return true
		}
		if d.Status != delegation.StatusRejected || a.Calls() != before {
			t.Fatalf("refused by the breaker: %+v, and the agent was called %d times meanwhile", d, a.Calls()-before)
		}
		stored(t, f.ctx, f.x, "acme", d.ID, delegation.StatusRejected)
		return false
	})
	return d, err
}

// failTimes makes n delegations that the agent answers with an error, each recorded failed
// with want in its error.
func failTimes(t *testing.T, f dispatcherFixture, n int, want string) {
	t.Helper()
	for i := range n {
		d, err := f.x.Delegate(f.ctx, "acme", syncReview(), nil)
		if err != nil || d.Status != delegation.StatusFailed || !strings.Contains(d.Error, want) {
			t.Fatalf("failure %d: %+v, %v; want failed with %q", i, d, err, want)
		}
		stored(t, f.ctx, f.x, "acme", d.ID, delegation.StatusFailed)
	}
}

// TestServiceBreakerOpensAndCloses: consecutive 5xx answers open the endpoint's breaker, which
// then refuses (ErrAgentUnavailable, recorded rejected, nothing sent) until its cooldown ends;
// the one trial call then closes it when the agent answers.
func TestServiceBreakerOpensAndCloses(t *testing.T) {
	a := agenttest.New(t, answered(http.StatusOK))
	f := newDispatcherFixtureAt(t, delegation.Config{BreakerFailures: 3, BreakerCooldown: 2 * time.Second}, nil, a.Endpoint())
	a.SetReply(answered(http.StatusInternalServerError))
	failTimes(t, f, 3, "the agent answered 500")

	d, err := f.x.Delegate(f.ctx, "acme", syncReview(), nil)
	if !errors.Is(err, delegation.ErrAgentUnavailable) || d.Status != delegation.StatusRejected {
		t.Fatalf("after 3 failures: %+v, %v; want rejected, ErrAgentUnavailable", d, err)
	}
	stored(t, f.ctx, f.x, "acme", d.ID, delegation.StatusRejected)
	if n := a.Calls(); n != 3 {
		t.Fatalf("the agent was called %d times, want 3: the open breaker sent a call", n)
	}

	a.SetReply(answered(http.StatusOK))
	d, err = breakerOpen(t, f, a)
	if err != nil || d.Status != delegation.StatusCompleted {
		t.Fatalf("half-open trial: %+v, %v; want completed", d, err)
	}
	stored(t, f.ctx, f.x, "acme", d.ID, delegation.StatusCompleted)
	// Closed again: calls go through at once, without waiting for another cooldown.
	for i := range 3 {
		if d, err := f.x.Delegate(f.ctx, "acme", syncReview(), nil); err != nil || d.Status != delegation.StatusCompleted {
			t.Fatalf("call %d after the trial: %+v, %v; want completed", i, d, err)
		}
	}
}

// TestServiceBreakerReopens: a half-open trial the agent fails opens the breaker again at once.
func TestServiceBreakerReopens(t *testing.T) {
	a := agenttest.New(t, answered(http.StatusOK))
	f := newDispatcherFixtureAt(t, delegation.Config{BreakerFailures: 2, BreakerCooldown: 3 * time.Second}, nil, a.Endpoint())
	a.SetReply(answered(http.StatusBadGateway))
	failTimes(t, f, 2, "the agent answered 502")

	d, err := breakerOpen(t, f, a)
	if err != nil || d.Status != delegation.StatusFailed {
		t.Fatalf("half-open trial: %+v, %v; want failed", d, err)
	}
	calls := a.Calls()
	d, err = f.x.Delegate(f.ctx, "acme", syncReview(), nil)
	if !errors.Is(err, delegation.ErrAgentUnavailable) || d.Status != delegation.StatusRejected {
		t.Fatalf("after a failed trial: %+v, %v; want rejected, ErrAgentUnavailable", d, err)
	}
	stored(t, f.ctx, f.x, "acme", d.ID, delegation.StatusRejected)
	if n := a.Calls(); n != calls {
		t.Fatalf("the re-opened breaker let %d calls through", n-calls)
	}
}

// TestServiceBreakerIgnoresShortTimeouts: timeouts of a caller's timeoutMs below the default
// say nothing of the agent, so they never open the breaker, however many.
func TestServiceBreakerIgnoresShortTimeouts(t *testing.T) {
	a := agenttest.New(t, answered(http.StatusOK))
	f := newDispatcherFixtureAt(t, delegation.Config{BreakerFailures: 1, DefaultTimeout: time.Minute}, nil, a.Endpoint())
	a.SetReply(agenttest.Hang)
	short := syncReview()
	short.TimeoutMS = 20
	for i := range 3 {
		d, err := f.x.Delegate(f.ctx, "acme", short, nil)
		if err != nil || d.Status != delegation.StatusTimeout {
			t.Fatalf("short call %d: %+v, %v; want timeout", i, d, err)
		}
		stored(t, f.ctx, f.x, "acme", d.ID, delegation.StatusTimeout)
	}
	// Each short call timed out rather than being refused (a refusal is an error). How many of
	// them reached the agent before their 20 ms ran out depends on the machine's load; the next
	// call must reach it.
	a.SetReply(answered(http.StatusOK))
	d, err := f.x.Delegate(f.ctx, "acme", syncReview(), nil)
	if err != nil || d.Status != delegation.StatusCompleted {
		t.Fatalf("after 3 short timeouts: %+v, %v; want completed (breaker closed)", d, err)
	}
	if n := a.Count(func(r agenttest.Request) bool { return r.Task.DelegationID == d.ID }); n != 1 {
		t.Fatalf("the call after the short timeouts reached the agent %d times, want once", n)
	}
	// A counted failure still opens it: the breaker is on, not merely lenient.
	a.SetReply(answered(http.StatusServiceUnavailable))
	failTimes(t, f, 1, "the agent answered 503")
	if _, err := f.x.Delegate(f.ctx, "acme", syncReview(), nil); !errors.Is(err, delegation.ErrAgentUnavailable) {
		t.Fatalf("after a 503: %v, want ErrAgentUnavailable", err)
	}
}

// guardedDoer sends through the real SSRF-guarded client while guarded, which refuses the
// loopback agent, and through the plain client otherwise.
type guardedDoer struct {
	guarded atomic.Bool
	guard   *http.Client
}

func (g *guardedDoer) Do(r *http.Request) (*http.Response, error) {
	if g.guarded.Load() {
		return g.guard.Do(r)
	}
	return http.DefaultClient.Do(r)
}

// TestServiceBreakerIgnoresGuardRefusals: the outbound guard refusing the endpoint's address is
// ErrBlocked, recorded rejected, and never counts against the endpoint's breaker.
func TestServiceBreakerIgnoresGuardRefusals(t *testing.T) {
	a := agenttest.New(t, answered(http.StatusOK))
	doer := &guardedDoer{guard: outbound.New(outbound.Config{})}
	doer.guarded.Store(true)
	x := newServiceDispatcher(t, delegation.Config{BreakerFailures: 1}, serviceDeps{
		endpoint: a.Endpoint(), doer: doer, blocked: outbound.Blocked,
	})
	ctx := as("olga", "acme")
	for i := range 3 {
		d, err := x.Delegate(ctx, "acme", syncReview(), nil)
		if !errors.Is(err, delegation.ErrBlocked) || d.Status != delegation.StatusRejected {
			t.Fatalf("guarded call %d: %+v, %v; want rejected, ErrBlocked", i, d, err)
		}
		stored(t, ctx, x, "acme", d.ID, delegation.StatusRejected)
	}
	if n := a.Calls(); n != 0 {
		t.Fatalf("the guard let %d calls reach a loopback agent", n)
	}
	doer.guarded.Store(false)
	d, err := x.Delegate(ctx, "acme", syncReview(), nil)
	if err != nil || d.Status != delegation.StatusCompleted {
		t.Fatalf("after 3 guard refusals: %+v, %v; want completed (breaker closed)", d, err)
	}
}
