package delegation_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/cards/agenttest"
	"github.com/agentcards/agentcards/cards/delegation"
	"github.com/agentcards/agentcards/tenants"
)

// asyncAccepted starts an async delegation that the agent accepts (202), and returns it with its
// callback token once it is recorded accepted.
func asyncAccepted(t *testing.T, f dispatcherFixture, timeoutMS int64) (delegation.Delegation, string) {
	t.Helper()
	var token string
	req := asyncReview()
	req.TimeoutMS = timeoutMS
	d, err := f.x.Delegate(f.ctx, "acme", req, func(id, tok string) string {
		token = tok
		return "http://127.0.0.1:1/callbacks/" + id + "?token=" + tok
	})
	if err != nil || d.Status != delegation.StatusPending || token == "" {
		t.Fatalf("async delegation: %+v, %v (token %q); want pending with a token", d, err, token)
	}
	return d, token
}

// accepted waits until the agent's 202 is recorded.
func accepted(t *testing.T, f dispatcherFixture, id string) {
	t.Helper()
	eventually(t, "the agent's 202", func() bool {
		d, err := f.x.Get(f.ctx, "acme", id)
		return err == nil && d.Status == delegation.StatusAccepted
	})
}

func newCallbackFixture(t *testing.T) dispatcherFixture {
	a := agenttest.New(t, answered(http.StatusAccepted))
	return newDispatcherFixtureAt(t, delegation.Config{DefaultTimeout: time.Minute, MaxResultBytes: 256}, nil, a.Endpoint())
}

// TestServiceCallbackCompletes: the right token completes the delegation with its result; a
// wrong one, or an oversized body, changes nothing; a second result is ErrConflict.
func TestServiceCallbackCompletes(t *testing.T) {
	f := newCallbackFixture(t)
	d, token := asyncAccepted(t, f, 0)
	accepted(t, f, d.ID)

	if err := f.x.Complete(f.ctx, "acme", d.ID, token+"x", []byte(`{"status":"completed","result":"forged"}`)); !errors.Is(err, delegation.ErrNotFound) {
		t.Fatalf("wrong token: %v, want ErrNotFound", err)
	}
	big := `{"status":"completed","result":"` + strings.Repeat("a", 300) + `"}`
	if err := f.x.Complete(f.ctx, "acme", d.ID, token, []byte(big)); !errors.Is(err, delegation.ErrTooLarge) {
		t.Fatalf("oversized result: %v, want ErrTooLarge", err)
	}
	stored(t, f.ctx, f.x, "acme", d.ID, delegation.StatusAccepted)

	if err := f.x.Complete(f.ctx, "acme", d.ID, token, []byte(`{"status":"completed","result":{"lgtm":true}}`)); err != nil {
		t.Fatalf("callback: %v", err)
	}
	got := stored(t, f.ctx, f.x, "acme", d.ID, delegation.StatusCompleted)
	var result struct{ LGTM bool }
	if err := json.Unmarshal(got.Result, &result); err != nil || !result.LGTM || got.Error != "" {
		t.Fatalf("stored %+v (result %s), want the posted result", got, got.Result)
	}
	if err := f.x.Complete(f.ctx, "acme", d.ID, token, []byte(`{"status":"completed","result":"again"}`)); !errors.Is(err, delegation.ErrConflict) {
		t.Fatalf("second callback: %v, want ErrConflict", err)
	}
	if again := stored(t, f.ctx, f.x, "acme", d.ID, delegation.StatusCompleted); string(again.Result) != string(got.Result) {
		t.Fatalf("the second callback changed the result to %s", again.Result)
	}
}

// TestServiceCallbackSuspendedTenant: a suspended tenant refuses its agents' results as it
// refuses every request: the right token answers as a wrong one, and the record is unchanged;
// once the tenant is active again the result lands.
func TestServiceCallbackSuspendedTenant(t *testing.T) {
	f := newCallbackFixture(t)
	d, token := asyncAccepted(t, f, 0)
	accepted(t, f, d.ID)
	root := authz.WithPrincipal(context.Background(), authz.Principal{Subject: "root", PlatformAdmin: true})
	setStatus := func(s tenants.Status) {
		t.Helper()
		if _, err := f.tenants.Update(root, "acme", tenants.Patch{Status: &s}); err != nil {
			t.Fatal(err)
		}
	}
	setStatus(tenants.StatusSuspended)
	err := f.x.Complete(context.Background(), "acme", d.ID, token, []byte(`{"status":"completed","result":"ok"}`))
	if !errors.Is(err, delegation.ErrNotFound) {
		t.Fatalf("result for a suspended tenant: %v, want not found", err)
	}
	setStatus(tenants.StatusActive)
	stored(t, f.ctx, f.x, "acme", d.ID, delegation.StatusAccepted)
	if err := f.x.Complete(context.Background(), "acme", d.ID, token, []byte(`{"status":"completed","result":"ok"}`)); err != nil {
		t.Fatalf("result once active again: %v", err)
	}
	stored(t, f.ctx, f.x, "acme", d.ID, delegation.StatusCompleted)
}

// TestServiceCallbackFailed: a failed callback records the agent's error.
func TestServiceCallbackFailed(t *testing.T) {
	f := newCallbackFixture(t)
	d, token := asyncAccepted(t, f, 0)
	accepted(t, f, d.ID)
	if err := f.x.Complete(f.ctx, "acme", d.ID, token, []byte(`{"status":"failed","error":"repository not found"}`)); err != nil {
		t.Fatalf("callback: %v", err)
	}
	got := stored(t, f.ctx, f.x, "acme", d.ID, delegation.StatusFailed)
	if got.Error != "repository not found" || got.Result != nil {
		t.Fatalf("stored %+v, want the agent's error", got)
	}
}

// TestServiceCallbackExpired: a result posted after the deadline is ErrExpired, and the
// delegation is recorded as timeout.
func TestServiceCallbackExpired(t *testing.T) {
	f := newCallbackFixture(t)
	d, token := asyncAccepted(t, f, 200)
	eventually(t, "the deadline", func() bool { return time.Now().After(d.Deadline) })
	if err := f.x.Complete(f.ctx, "acme", d.ID, token, []byte(`{"status":"completed","result":"late"}`)); !errors.Is(err, delegation.ErrExpired) {
		t.Fatalf("late callback: %v, want ErrExpired", err)
	}
	if got := stored(t, f.ctx, f.x, "acme", d.ID, delegation.StatusTimeout); got.Result != nil {
		t.Fatalf("stored %+v, want no result", got)
	}
}

// TestServiceAsyncTimeoutBeyondMaxTimeout: an async delegation over HTTP may name a timeout up to
// MaxAsyncTimeout, well past MaxTimeout: its deadline, and its delegation token's expiry, follow
// it, and its result is taken long after MaxTimeout has passed; a sync delegation's timeout is
// still capped at MaxTimeout, and an async one's at MaxAsyncTimeout.
func TestServiceAsyncTimeoutBeyondMaxTimeout(t *testing.T) {
	a := agenttest.New(t, answered(http.StatusAccepted))
	cfg := delegation.Config{DefaultTimeout: 100 * time.Millisecond, MaxTimeout: 200 * time.Millisecond, MaxAsyncTimeout: time.Hour}
	f := newDispatcherFixtureAt(t, cfg, nil, a.Endpoint())

	d, token := asyncAccepted(t, f, (30 * time.Minute).Milliseconds())
	if got := d.Deadline.Sub(d.CreatedAt); got != 30*time.Minute {
		t.Fatalf("deadline %s after creation, want 30m", got)
	}
	accepted(t, f, d.ID)
	if exp := tokenExpiry(t, a.Last().Header.Get("X-Delegation-Token")); exp.Before(d.Deadline) {
		t.Fatalf("the delegation token expires at %s, before the deadline %s", exp, d.Deadline)
	}
	time.Sleep(cfg.MaxTimeout + 50*time.Millisecond)
	if err := f.x.Complete(f.ctx, "acme", d.ID, token, []byte(`{"status":"completed","result":"late but in time"}`)); err != nil {
		t.Fatalf("a result after MaxTimeout, before the deadline: %v", err)
	}
	stored(t, f.ctx, f.x, "acme", d.ID, delegation.StatusCompleted)

	d, _ = asyncAccepted(t, f, (48 * time.Hour).Milliseconds())
	if got := d.Deadline.Sub(d.CreatedAt); got != time.Hour {
		t.Fatalf("async deadline %s after creation, want MaxAsyncTimeout (1h)", got)
	}
	req := syncReview()
	req.TimeoutMS = (30 * time.Minute).Milliseconds()
	a.SetReply(answered(http.StatusOK))
	s, err := f.x.Delegate(f.ctx, "acme", req, nil)
	if err != nil || s.Deadline.Sub(s.CreatedAt) != cfg.MaxTimeout {
		t.Fatalf("sync: %+v, %v; want its deadline MaxTimeout after creation", s, err)
	}
}

// tokenExpiry reads a JWT's exp claim, unverified (the token's checks are token's tests').
func tokenExpiry(t *testing.T, tok string) time.Time {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %q", tok)
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	var claims struct {
		Exp int64 `json:"exp"`
	}
	if err != nil || json.Unmarshal(payload, &claims) != nil || claims.Exp == 0 {
		t.Fatalf("the JWT's claims: %s (%v)", payload, err)
	}
	return time.Unix(claims.Exp, 0)
}
