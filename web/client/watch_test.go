package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/agentcards/agentcards/web/api"
	"github.com/agentcards/agentcards/web/client"
	"github.com/agentcards/agentcards/web/webtest"
)

// TestWatchResumes: a stream the server ends with resume is opened again at once with
// Last-Event-ID set to the last id received, and the changes go on; a refusal that another
// attempt cannot mend (401) is yielded and ends the watch.
func TestWatchResumes(t *testing.T) {
	event := func(w http.ResponseWriter, id, name, data string) {
		fmt.Fprintf(w, "id: %s\nevent: %s\ndata: %s\n\n", id, name, data)
	}
	s := webtest.StartScript(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 2 {
			webtest.Reply(w, http.StatusUnauthorized, `{"error":{"code":"unauthorized","message":"the bearer token has expired"}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		event(w, fmt.Sprintf("c%d0", n), "ready", `{}`)
		event(w, fmt.Sprintf("c%d1", n), "change", fmt.Sprintf(`{"op":"upsert","agentId":"a%d","revision":1,"card":{"agentId":"a%d","revision":1}}`, n, n))
		event(w, fmt.Sprintf("c%d2", n), "resume", `{"reason":"draining"}`)
	})
	c := newClient(t, s)
	var got []client.Change
	var err error
	for ch, e := range c.Cards.Watch(context.Background(), api.CardsChanges{Since: "start"}) {
		if e != nil {
			err = e
			break
		}
		got = append(got, ch)
	}
	if len(got) != 2 || got[0].AgentID != "a0" || got[0].Cursor != "c01" || got[1].AgentID != "a1" {
		t.Fatalf("changes %+v", got)
	}
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Code != "unauthorized" {
		t.Fatalf("the watch ended with %v, want the 401", err)
	}
	reqs := s.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	for i, want := range []string{"start", "c02", "c12"} {
		if got := reqs[i].Header.Get("Last-Event-ID"); got != want {
			t.Errorf("request %d: Last-Event-ID %q, want %q", i, got, want)
		}
		if got := reqs[i].Header.Get("Accept"); got != "text/event-stream" {
			t.Errorf("request %d: Accept %q", i, got)
		}
	}
	if reqs[0].Target != "/v1/tenants/acme/cards:changes?since=start" {
		t.Errorf("target %s", reqs[0].Target)
	}
}
