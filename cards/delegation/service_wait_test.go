package delegation_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/agentcards/agentcards/cards/agenttest"
	"github.com/agentcards/agentcards/cards/delegation"
	"github.com/agentcards/agentcards/tenants/paging"
)

// TestServiceWait: Wait lasts until the async delegation in flight has its outcome, and after it
// an async delegation is ErrClosed, neither recorded nor sent.
func TestServiceWait(t *testing.T) {
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	agent := agenttest.New(t, func(w http.ResponseWriter, _ *http.Request, _ agenttest.Request) {
		arrived <- struct{}{}
		<-release
		_, _ = w.Write([]byte(`{"result": "done"}`))
	})
	f := newDispatcherFixtureAt(t, delegation.Config{}, nil, agent.Endpoint())
	noCallback := func(id, token string) string { return "http://127.0.0.1:1/cb/" + id + "?token=" + token }

	first, err := f.x.Delegate(f.ctx, "acme", asyncReview(), noCallback)
	if err != nil || first.Status != delegation.StatusPending {
		t.Fatalf("async delegation: %+v, %v; want pending", first, err)
	}
	<-arrived
	waited := make(chan struct{})
	go func() { f.x.Wait(); close(waited) }()
	select {
	case <-waited:
		t.Fatal("Wait returned while a delegation was in flight")
	default:
	}
	close(release)
	<-waited
	stored(t, f.ctx, f.x, "acme", first.ID, delegation.StatusCompleted)

	d, err := f.x.Delegate(f.ctx, "acme", asyncReview(), noCallback)
	if !errors.Is(err, delegation.ErrClosed) {
		t.Fatalf("async delegation after Wait: %+v, %v; want ErrClosed", d, err)
	}
	list, _, err := f.x.List(f.ctx, "acme", delegation.Filter{}, paging.Page{})
	if err != nil || len(list) != 1 || list[0].ID != first.ID {
		t.Fatalf("records after Wait: %+v, %v; want only %s", list, err, first.ID)
	}
	if n := agent.Calls(); n != 1 {
		t.Fatalf("the agent was called %d times, want 1", n)
	}
}
