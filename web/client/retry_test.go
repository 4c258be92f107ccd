package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/agentcards/agentcards/web/api"
	"github.com/agentcards/agentcards/web/client"
	"github.com/agentcards/agentcards/web/webtest"
)

// retryCalls are a request of each kind the retry rule tells apart.
var retryCalls = []struct {
	name  string
	retry bool // safe to repeat: a read, a question, a PUT or a DELETE
	call  func(ctx context.Context, c *client.Client) error
}{
	{"cards.get (GET)", true, func(ctx context.Context, c *client.Client) error {
		_, err := c.Cards.Get(ctx, api.CardRef{AgentID: "rev"})
		return err
	}},
	{"access.check (a question, POST)", true, func(ctx context.Context, c *client.Client) error {
		_, err := c.Access.Check(ctx, api.AccessCheck{Action: "cards:read", Object: "cards/rev"})
		return err
	}},
	{"cards.replace (PUT)", true, func(ctx context.Context, c *client.Client) error {
		_, err := c.Cards.Replace(ctx, api.CardsReplace{CardInput: api.CardInput{AgentID: "rev", Name: "R"}, IfRevision: 2})
		return err
	}},
	{"cards.remove (DELETE)", true, func(ctx context.Context, c *client.Client) error {
		_, err := c.Cards.Remove(ctx, api.CardsRemove{AgentID: "rev"})
		return err
	}},
	{"cards.register (POST)", false, func(ctx context.Context, c *client.Client) error {
		_, err := c.Cards.Register(ctx, api.CardsRegister{CardInput: api.CardInput{AgentID: "rev", Name: "R"}})
		return err
	}},
	{"cards.update (PATCH)", false, func(ctx context.Context, c *client.Client) error {
		_, err := c.Cards.Update(ctx, api.CardsUpdate{AgentID: "rev", Patch: json.RawMessage(`{"name": "S"}`)})
		return err
	}},
	{"delegations.create (POST)", false, func(ctx context.Context, c *client.Client) error {
		_, err := c.Delegations.Create(ctx, api.DelegationsCreate{AgentID: "rev", Capability: "review", Task: "t"})
		return err
	}},
}

// TestRetryWhichRequests: with WithRetry, a request safe to repeat is sent again after a 503
// (the same request, body and all) and succeeds; one that is not is sent once and answers the
// 503. Without WithRetry nothing is sent twice.
func TestRetryWhichRequests(t *testing.T) {
	for _, c := range retryCalls {
		t.Run(c.name, func(t *testing.T) {
			s := webtest.StartScript(t, func(w http.ResponseWriter, _ *http.Request, n int) {
				if n == 0 {
					webtest.Reply(w, http.StatusServiceUnavailable, `{"error": {"code": "unavailable", "message": "busy"}}`)
					return
				}
				webtest.Reply(w, http.StatusOK, `{}`)
			})
			err := c.call(context.Background(), newClient(t, s, client.WithRetry(3)))
			got := s.Requests()
			if c.retry {
				if err != nil || len(got) != 2 {
					t.Fatalf("%d requests, %v; want a second one that succeeds", len(got), err)
				}
				if got[0].Method != got[1].Method || got[0].Target != got[1].Target || got[0].Body != got[1].Body ||
					got[0].Header.Get("If-Match") != got[1].Header.Get("If-Match") {
					t.Errorf("the second request differs: %+v, then %+v", got[0], got[1])
				}
			} else {
				var ce *client.Error
				if len(got) != 1 || !errors.As(err, &ce) || ce.Status != http.StatusServiceUnavailable {
					t.Errorf("%d requests, %v; want one, answering the 503", len(got), err)
				}
			}
			once := webtest.StartScript(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
				webtest.Reply(w, http.StatusServiceUnavailable, `{"error": {"code": "unavailable", "message": "busy"}}`)
			})
			if err := c.call(context.Background(), newClient(t, once)); err == nil || len(once.Requests()) != 1 {
				t.Errorf("without WithRetry: %d requests, %v; want one, failed", len(once.Requests()), err)
			}
		})
	}
}

// TestRetryWhichStatuses: 429, 502, 503 and 504 are tried again; any other refusal is final. A
// request that keeps failing is tried 1 + attempts times and answers the last failure.
func TestRetryWhichStatuses(t *testing.T) {
	for status, retried := range map[int]bool{429: true, 502: true, 503: true, 504: true, 500: false, 400: false, 404: false, 409: false, 412: false} {
		s := webtest.StartScript(t, func(w http.ResponseWriter, _ *http.Request, n int) {
			if n == 0 {
				webtest.Reply(w, status, `{"error": {"code": "some_code", "message": "first"}}`)
				return
			}
			webtest.Reply(w, http.StatusOK, `{}`)
		})
		_, err := newClient(t, s, client.WithRetry(1)).Cards.Get(context.Background(), api.CardRef{AgentID: "rev"})
		if n := len(s.Requests()); retried && (n != 2 || err != nil) || !retried && (n != 1 || err == nil) {
			t.Errorf("%d: %d requests, %v; retried %v", status, n, err, retried)
		}
	}
	s := webtest.StartScript(t, func(w http.ResponseWriter, _ *http.Request, n int) {
		webtest.Reply(w, http.StatusBadGateway, `{"error": {"code": "unavailable", "message": "try `+string(rune('0'+n))+`"}}`)
	})
	_, err := newClient(t, s, client.WithRetry(2)).Cards.Get(context.Background(), api.CardRef{AgentID: "rev"})
	var ce *client.Error
	if len(s.Requests()) != 3 || !errors.As(err, &ce) || ce.Status != http.StatusBadGateway || ce.Message != "try 2" {
		t.Errorf("always 502: %d requests, %v; want 3, answering the last", len(s.Requests()), err)
	}
}

// TestRetryAfterAndDrops: a retry waits what Retry-After asks for; a request that got no answer
// at all (the connection dropped) is tried again when safe to repeat, and not otherwise.
func TestRetryAfterAndDrops(t *testing.T) {
	s := webtest.StartScript(t, func(w http.ResponseWriter, _ *http.Request, n int) {
		if n == 0 {
			webtest.Reply(w, http.StatusTooManyRequests, `{"error": {"code": "rate_limited", "message": "slow down"}}`, "Retry-After", "1")
			return
		}
		webtest.Reply(w, http.StatusOK, `{}`)
	})
	if _, err := newClient(t, s, client.WithRetry(1)).Cards.Get(context.Background(), api.CardRef{AgentID: "rev"}); err != nil {
		t.Fatal(err)
	}
	if got := s.Requests(); len(got) != 2 || got[1].At.Sub(got[0].At) < time.Second {
		t.Errorf("the retry came %v after the 429 that asked for 1s", got[1].At.Sub(got[0].At))
	}

	drop := func(w http.ResponseWriter, _ *http.Request, n int) {
		if n == 0 {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				_ = conn.Close()
			}
			return
		}
		webtest.Reply(w, http.StatusOK, `{}`)
	}
	get := webtest.StartScript(t, drop)
	if _, err := newClient(t, get, client.WithRetry(1)).Cards.Get(context.Background(), api.CardRef{AgentID: "rev"}); err != nil || len(get.Requests()) != 2 {
		t.Errorf("a GET whose connection dropped: %d requests, %v; want a second that succeeds", len(get.Requests()), err)
	}
	post := webtest.StartScript(t, drop)
	_, err := newClient(t, post, client.WithRetry(3)).Cards.Register(context.Background(), api.CardsRegister{CardInput: api.CardInput{AgentID: "rev", Name: "R"}})
	var ce *client.Error
	if err == nil || errors.As(err, &ce) || len(post.Requests()) != 1 {
		t.Errorf("a POST whose connection dropped: %d requests, %v; want one, failed with no answer", len(post.Requests()), err)
	}
}

// TestRetryStopsWithTheContext: a retry waiting for its time gives up as soon as the context
// ends, answering both the last failure and the context's error.
func TestRetryStopsWithTheContext(t *testing.T) {
	s := webtest.StartScript(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		webtest.Reply(w, http.StatusServiceUnavailable, `{"error": {"code": "unavailable", "message": "down"}}`, "Retry-After", "3600")
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The context ends once the 503 has been read whole: the client is then waiting to retry.
	hc := &http.Client{Transport: cancelOnClose{http.DefaultTransport, cancel}}
	start := time.Now()
	_, err := newClient(t, s, client.WithRetry(5), client.WithHTTPClient(hc)).Cards.Get(ctx, api.CardRef{AgentID: "rev"})
	var ce *client.Error
	if !errors.Is(err, context.Canceled) || !errors.As(err, &ce) || ce.Status != http.StatusServiceUnavailable || len(s.Requests()) != 1 {
		t.Errorf("%d requests, %v; want one, the 503 and the context's end", len(s.Requests()), err)
	}
	// It did not wait the 30 s a retry waits at most.
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("it gave up after %v", d)
	}
}

// cancelOnClose is a transport whose answers end the context when their body is closed.
type cancelOnClose struct {
	base   http.RoundTripper
	cancel context.CancelFunc
}

func (c cancelOnClose) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.base.RoundTrip(r)
	if err == nil {
		resp.Body = closer{resp.Body, c.cancel}
	}
	return resp, err
}

type closer struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c closer) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}
