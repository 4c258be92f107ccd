package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/agentcards/agentcards/cards/webhooks"
	"github.com/agentcards/agentcards/cmd/agentcards/app"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/web/api"
	"github.com/agentcards/agentcards/web/outbound"
)

// receiver is a webhook subscriber on loopback. It keeps the events it answered 2xx, in the
// order they came, answers status instead while one is set, and counts the connections it
// accepted.
type receiver struct {
	srv   *httptest.Server
	conns atomic.Int64
	hits  atomic.Int64

	mu     sync.Mutex
	status int
	events []hookEvent
}

// hookEvent is an event a receiver took: its body, its signature and its content type.
type hookEvent struct {
	body        []byte
	signature   string
	contentType string
	event       webhooks.Event
}

// countingListener counts the connections its listener accepts.
type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	r := &receiver{}
	r.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.hits.Add(1)
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.status != 0 {
			w.WriteHeader(r.status)
			return
		}
		rec := hookEvent{body: body, signature: req.Header.Get(webhooks.SignatureHeader), contentType: req.Header.Get("Content-Type")}
		if err := json.Unmarshal(body, &rec.event); err != nil {
			t.Errorf("receiver: not an event: %s", body)
		}
		r.events = append(r.events, rec)
		w.WriteHeader(http.StatusNoContent)
	}))
	r.srv.Listener = countingListener{Listener: r.srv.Listener, n: &r.conns}
	r.srv.Start()
	t.Cleanup(r.srv.Close)
	return r
}

// setStatus makes the receiver answer status (0: take events again).
func (r *receiver) setStatus(status int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status = status
}

func (r *receiver) got() []hookEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// fakeClock is a clock a test moves.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Now().UTC().Truncate(time.Second)} }

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// createWebhook subscribes url (with the filter in body's other members) as tok.
func (e *env) createWebhook(t *testing.T, tok, tenant string, body map[string]any) webhooks.Webhook {
	t.Helper()
	r := e.do("POST", "/v1/tenants/"+tenant+"/webhooks", tok, body)
	expect(t, r, http.StatusCreated)
	var w webhooks.Webhook
	r.json(t, &w)
	if got := r.header.Get("Location"); got != "/v1/tenants/"+tenant+"/webhooks/"+w.ID {
		t.Errorf("Location %q", got)
	}
	return w
}

// getWebhook reads a subscription as tok.
func (e *env) getWebhook(t *testing.T, tok, tenant, id string) webhooks.Webhook {
	t.Helper()
	r := e.do("GET", "/v1/tenants/"+tenant+"/webhooks/"+id, tok, nil)
	expect(t, r, http.StatusOK)
	var w webhooks.Webhook
	r.json(t, &w)
	return w
}

// deliveries reads a subscription's delivery records as tok.
func (e *env) deliveries(t *testing.T, tok, tenant, id string) []webhooks.Delivery {
	t.Helper()
	r := e.do("GET", "/v1/tenants/"+tenant+"/webhooks/"+id+"/deliveries", tok, nil)
	expect(t, r, http.StatusOK)
	var l api.DeliveryList
	r.json(t, &l)
	return l.Items
}

// deliver runs the server's delivery rounds until one delivers nothing.
func (e *env) deliver(t *testing.T) {
	t.Helper()
	for range 50 {
		n, err := e.deliverer.Round(context.Background())
		if err != nil {
			t.Fatalf("delivery round: %v", err)
		}
		if n == 0 {
			return
		}
	}
	t.Fatal("delivery rounds kept delivering")
}

// summary is what the tests compare of the events a receiver took: type, subject, the op and
// revision of the data.
func summary(rs []hookEvent) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.event.Type + " " + r.event.Subject + " " + r.event.Data.Op + "@" + itoa(r.event.Data.Revision)
	}
	return out
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

// TestWebhooksDeliverChangesInOrder: a card created, changed, another created, the first removed:
// the subscriber receives one CloudEvent per change, in order, each signed so that the keys the
// server publishes verify it, as a receiver checks it; the records say each went out.
func TestWebhooksDeliverChangesInOrder(t *testing.T) {
	forEachDialectWith(t, envOptions{allowLoopback: true}, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		alice := e.token("alice", "acme", false)
		rcv := newReceiver(t)
		hook := e.createWebhook(t, alice, "acme", map[string]any{"url": rcv.srv.URL + "/events"})
		if hook.State != webhooks.StateActive || len(hook.Types) != 0 || len(hook.AgentIDs) != 0 {
			t.Fatalf("created: %+v", hook)
		}
		// A subscription to another tenant's changes only: it receives none of acme's.
		e.mkTenant("other", "olga")
		otherRcv := newReceiver(t)
		e.createWebhook(t, e.token("olga", "other", false), "other", map[string]any{"url": otherRcv.srv.URL})

		writes := []func(){
			func() { expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, sampleCard("a1")), http.StatusCreated) },
			func() {
				expect(t, e.do("PATCH", "/v1/tenants/acme/cards/a1", alice, map[string]any{"description": "patched"}), http.StatusOK)
			},
			func() { expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, sampleCard("a2")), http.StatusCreated) },
			func() { expect(t, e.do("DELETE", "/v1/tenants/acme/cards/a1", alice, nil), http.StatusNoContent) },
		}
		for _, w := range writes {
			w()
			e.deliver(t)
		}
		got := rcv.got()
		want := []string{"agentcards.card.upserted a1 upsert@1", "agentcards.card.upserted a1 upsert@2",
			"agentcards.card.upserted a2 upsert@1", "agentcards.card.removed a1 remove@2"}
		if !slices.Equal(summary(got), want) {
			t.Fatalf("hookEvent %q, want %q", summary(got), want)
		}
		if n := len(otherRcv.got()); n != 0 {
			t.Errorf("the other tenant's subscriber hookEvent %d events", n)
		}
		jwks := fetchJWKS(t, e.srv.URL)
		var ids []string
		for i, r := range got {
			ev := r.event
			if ev.SpecVersion != "1.0" || ev.Source != e.srv.URL+"/v1/tenants/acme" || ev.DataContentType != "application/json" ||
				ev.Time.IsZero() || ev.ID == "" || r.contentType != webhooks.ContentType {
				t.Errorf("event %d: %+v (Content-Type %q)", i, ev, r.contentType)
			}
			if slices.Contains(ids, ev.ID) || (len(ids) > 0 && len(ev.ID) < len(ids[len(ids)-1])) {
				t.Errorf("event %d: id %q after %q", i, ev.ID, ids)
			}
			ids = append(ids, ev.ID)
			if err := verifyDelivery(jwks, r.signature, r.body); err != nil {
				t.Errorf("event %d: the signature does not verify: %v", i, err)
			}
			tampered := bytes.Replace(r.body, []byte(`"a`), []byte(`"b`), 1)
			if verifyDelivery(jwks, r.signature, tampered) == nil {
				t.Errorf("event %d: a changed body verifies", i)
			}
		}
		if got[1].event.Data.Card == nil || got[1].event.Data.Card.Description != "patched" || got[3].event.Data.Card != nil {
			t.Errorf("the data: %+v, %+v", got[1].event.Data, got[3].event.Data)
		}

		// The records, newest first, and the state.
		recs := e.deliveries(t, alice, "acme", hook.ID)
		if len(recs) != 4 {
			t.Fatalf("%d records: %+v", len(recs), recs)
		}
		for i, d := range recs {
			if !d.OK || d.Status != http.StatusNoContent || d.EventID != ids[3-i] || d.Error != "" {
				t.Errorf("record %d: %+v", i, d)
			}
		}
		if w := e.getWebhook(t, alice, "acme", hook.ID); w.State != webhooks.StateActive || w.Failures != 0 || w.FailingSince != nil {
			t.Errorf("state: %+v", w)
		}
	})
}

// fetchJWKS reads the keys the server publishes, over HTTP, as a receiver does.
func fetchJWKS(t *testing.T, base string) jose.JSONWebKeySet {
	t.Helper()
	res, err := http.Get(base + "/.well-known/jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var set jose.JSONWebKeySet
	if err := json.NewDecoder(res.Body).Decode(&set); err != nil {
		t.Fatal(err)
	}
	return set
}

// verifyDelivery checks a delivery's signature header against body with the key its "kid" names,
// with go-jose, as docs/webhooks.md tells a receiver to.
func verifyDelivery(set jose.JSONWebKeySet, signature string, body []byte) error {
	jws, err := jose.ParseDetached(signature, body, []jose.SignatureAlgorithm{jose.ES256, jose.EdDSA})
	if err != nil {
		return err
	}
	keys := set.Key(jws.Signatures[0].Header.KeyID)
	if len(keys) == 0 {
		return io.ErrUnexpectedEOF
	}
	_, err = jws.Verify(keys[0].Public())
	return err
}

// TestWebhooksReceiverDownThenUp: a subscriber down for ten minutes (by the deliverer's clock)
// is retried with backoff, and once it is back receives every change, in the order written.
func TestWebhooksReceiverDownThenUp(t *testing.T) {
	clock := newFakeClock()
	o := envOptions{allowLoopback: true, webhooks: appWebhooks(webhooks.Config{MinBackoff: time.Second, MaxBackoff: time.Minute}, clock.now)}
	forEachDialectWith(t, o, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		alice := e.token("alice", "acme", false)
		rcv := newReceiver(t)
		hook := e.createWebhook(t, alice, "acme", map[string]any{"url": rcv.srv.URL})
		rcv.setStatus(http.StatusServiceUnavailable)

		for _, id := range []string{"c1", "c2"} {
			expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, sampleCard(id)), http.StatusCreated)
		}
		expect(t, e.do("PATCH", "/v1/tenants/acme/cards/c1", alice, map[string]any{"description": "second"}), http.StatusOK)
		expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, sampleCard("c3")), http.StatusCreated)
		expect(t, e.do("PATCH", "/v1/tenants/acme/cards/c2", alice, map[string]any{"description": "second"}), http.StatusOK)

		for elapsed := time.Duration(0); elapsed < 10*time.Minute; elapsed += 7 * time.Second {
			e.deliver(t)
			clock.advance(7 * time.Second)
		}
		w := e.getWebhook(t, alice, "acme", hook.ID)
		// Backoff 1s, 2s, ... up to 1m: about 15 attempts in ten minutes, not 86.
		if hits := rcv.hits.Load(); w.State != webhooks.StateFailing || w.Failures < 5 || hits > 30 || int64(w.Failures) != hits ||
			w.FailingSince == nil || w.LastError != "answered 503" {
			t.Fatalf("while down: %d attempts, %+v", hits, w)
		}

		rcv.setStatus(0)
		clock.advance(time.Minute)
		e.deliver(t)
		want := []string{"agentcards.card.upserted c1 upsert@2", "agentcards.card.upserted c2 upsert@2",
			"agentcards.card.upserted c1 upsert@2", "agentcards.card.upserted c3 upsert@1", "agentcards.card.upserted c2 upsert@2"}
		if got := summary(rcv.got()); !slices.Equal(got, want) {
			t.Errorf("after it is back: %q, want %q", got, want)
		}
		if w := e.getWebhook(t, alice, "acme", hook.ID); w.State != webhooks.StateActive || w.Failures != 0 || w.FailingSince != nil || w.LastError != "" {
			t.Errorf("after it is back: %+v", w)
		}
		recs := e.deliveries(t, alice, "acme", hook.ID)
		if !recs[0].OK || recs[len(recs)-1].OK || recs[len(recs)-1].Status != http.StatusServiceUnavailable {
			t.Errorf("records: newest %+v, oldest %+v", recs[0], recs[len(recs)-1])
		}
	})
}

// appWebhooks is the webhook options of a test server: cfg, with the deliverer's clock now.
func appWebhooks(cfg webhooks.Config, now func() time.Time) app.WebhookOptions {
	return app.WebhookOptions{Config: cfg, Now: now}
}

// TestWebhooksDisabledAfterFailing: a subscription whose deliveries fail is failing from the first
// failure, disabled once it has failed for disableAfter, and then not tried again until an admin
// sets it active, which retries it at once.
func TestWebhooksDisabledAfterFailing(t *testing.T) {
	clock := newFakeClock()
	o := envOptions{allowLoopback: true, webhooks: appWebhooks(webhooks.Config{MinBackoff: time.Minute, MaxBackoff: 10 * time.Minute, DisableAfter: time.Hour}, clock.now)}
	forEachDialectWith(t, o, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		alice := e.token("alice", "acme", false)
		rcv := newReceiver(t)
		rcv.setStatus(http.StatusInternalServerError)
		hook := e.createWebhook(t, alice, "acme", map[string]any{"url": rcv.srv.URL})
		expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, sampleCard("c1")), http.StatusCreated)
		start := clock.now()
		e.deliver(t)
		w := e.getWebhook(t, alice, "acme", hook.ID)
		if w.State != webhooks.StateFailing || w.FailingSince == nil || !w.FailingSince.Equal(start) || !w.NextAttemptAt.Equal(start.Add(time.Minute)) {
			t.Fatalf("after the first failure: %+v", w)
		}
		for range 5 {
			clock.advance(10 * time.Minute)
			e.deliver(t)
		}
		if w := e.getWebhook(t, alice, "acme", hook.ID); w.State != webhooks.StateFailing {
			t.Fatalf("after 50 minutes: %+v", w)
		}
		clock.advance(11 * time.Minute)
		e.deliver(t)
		w = e.getWebhook(t, alice, "acme", hook.ID)
		if w.State != webhooks.StateDisabled {
			t.Fatalf("after 61 minutes: %+v", w)
		}
		hits := rcv.hits.Load()
		for range 6 {
			clock.advance(10 * time.Minute)
			e.deliver(t)
		}
		if rcv.hits.Load() != hits {
			t.Errorf("a disabled subscription was tried %d more times", rcv.hits.Load()-hits)
		}

		rcv.setStatus(0)
		r := e.do("PATCH", "/v1/tenants/acme/webhooks/"+hook.ID, alice, map[string]any{"state": "active"})
		expect(t, r, http.StatusOK)
		w = webhooks.Webhook{}
		r.json(t, &w)
		if w.State != webhooks.StateActive || w.Failures != 0 || w.FailingSince != nil || !w.NextAttemptAt.Equal(clock.now()) {
			t.Errorf("set active: %+v", w)
		}
		e.deliver(t)
		if got := summary(rcv.got()); !slices.Equal(got, []string{"agentcards.card.upserted c1 upsert@1"}) {
			t.Errorf("after the resume: %q", got)
		}
	})
}

// TestWebhooksGuardRefusesLoopback: with the outbound guard denying loopback, a subscriber URL at a
// literal loopback (or other refused) address is refused when created, and one whose name
// resolves to loopback is refused at each delivery: the receiver accepts no connection at all.
func TestWebhooksGuardRefusesLoopback(t *testing.T) {
	forEachDialectWith(t, envOptions{}, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		alice := e.token("alice", "acme", false)
		rcv := newReceiver(t)
		_, port, _ := net.SplitHostPort(rcv.srv.Listener.Addr().String())
		for _, u := range []string{rcv.srv.URL, "http://[::1]:" + port + "/", "http://169.254.169.254/latest", "https://10.0.0.1/x",
			"http://[::ffff:127.0.0.1]:" + port} {
			expect(t, e.do("POST", "/v1/tenants/acme/webhooks", alice, map[string]any{"url": u}), http.StatusBadRequest, "blocked_url")
		}
		hook := e.createWebhook(t, alice, "acme", map[string]any{"url": "http://localhost:" + port + "/events"})
		expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, sampleCard("c1")), http.StatusCreated)
		e.deliver(t)
		if n := rcv.conns.Load(); n != 0 {
			t.Fatalf("the receiver accepted %d connections", n)
		}
		recs := e.deliveries(t, alice, "acme", hook.ID)
		if len(recs) != 1 || recs[0].OK || !strings.Contains(recs[0].Error, "does not send to") {
			t.Errorf("records: %+v", recs)
		}
		if w := e.getWebhook(t, alice, "acme", hook.ID); w.State != webhooks.StateFailing {
			t.Errorf("state: %+v", w)
		}
		// An update to a refused address is refused as well.
		expect(t, e.do("PATCH", "/v1/tenants/acme/webhooks/"+hook.ID, alice, map[string]any{"url": rcv.srv.URL}), http.StatusBadRequest, "blocked_url")
	})
}

// TestWebhooksRefusals: every bad request answers the one error body with its status, and
// changes nothing.
func TestWebhooksRefusals(t *testing.T) {
	o := envOptions{allowLoopback: true, webhooks: appWebhooks(webhooks.Config{MaxPerTenant: 2}, nil)}
	forEachDialectWith(t, o, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		e.mkTenant("other", "olga")
		alice, bob := e.token("alice", "acme", false), e.token("bob", "acme", false)
		expect(t, e.do("POST", "/v1/tenants/acme/roles", alice, map[string]string{"subject": "bob", "role": "editor"}), http.StatusCreated)
		hook := e.createWebhook(t, alice, "acme", map[string]any{"url": "http://127.0.0.1:9/a", "types": []string{webhooks.TypeRemoved}})
		const path = "/v1/tenants/acme/webhooks"
		globs := make([]string, webhooks.MaxAgentGlobs+1)
		for i := range globs {
			globs[i] = "a*"
		}
		for _, c := range []struct {
			name, method, path, tok string
			body                    any
			status                  int
			code                    string
		}{
			{"malformed JSON", "POST", path, alice, `{"url": `, http.StatusBadRequest, "malformed_json"},
			{"an unknown member", "POST", path, alice, `{"url": "http://127.0.0.1:9/", "secret": "x"}`, http.StatusBadRequest, ""},
			{"no url", "POST", path, alice, `{}`, http.StatusBadRequest, "invalid"},
			{"not http", "POST", path, alice, map[string]any{"url": "ftp://127.0.0.1/x"}, http.StatusBadRequest, "invalid"},
			{"relative", "POST", path, alice, map[string]any{"url": "/events"}, http.StatusBadRequest, "invalid"},
			{"credentials", "POST", path, alice, map[string]any{"url": "http://u:p@127.0.0.1:9/"}, http.StatusBadRequest, "invalid"},
			{"a url too long", "POST", path, alice, map[string]any{"url": "http://127.0.0.1:9/" + strings.Repeat("a", webhooks.MaxURLBytes)}, http.StatusBadRequest, "invalid"},
			{"an unknown type", "POST", path, alice, map[string]any{"url": "http://127.0.0.1:9/", "types": []string{"agentcards.card.updated"}}, http.StatusBadRequest, "invalid"},
			{"a type twice", "POST", path, alice, map[string]any{"url": "http://127.0.0.1:9/", "types": []string{webhooks.TypeRemoved, webhooks.TypeRemoved}}, http.StatusBadRequest, "invalid"},
			{"a bad glob", "POST", path, alice, map[string]any{"url": "http://127.0.0.1:9/", "agentIds": []string{"a["}}, http.StatusBadRequest, "invalid"},
			{"too many globs", "POST", path, alice, map[string]any{"url": "http://127.0.0.1:9/", "agentIds": globs}, http.StatusBadRequest, "invalid"},
			{"a bad state", "PATCH", path + "/" + hook.ID, alice, map[string]any{"state": "failing"}, http.StatusBadRequest, "invalid"},
			{"no token", "POST", path, "", map[string]any{"url": "http://127.0.0.1:9/"}, http.StatusUnauthorized, "unauthorized"},
			{"an unknown tenant", "POST", "/v1/tenants/nope/webhooks", e.admin(), map[string]any{"url": "http://127.0.0.1:9/"}, http.StatusNotFound, "not_found"},
			{"another's tenant", "GET", "/v1/tenants/other/webhooks", alice, nil, http.StatusNotFound, "not_found"},
			{"forbidden", "POST", path, bob, map[string]any{"url": "http://127.0.0.1:9/"}, http.StatusForbidden, "forbidden"},
			{"forbidden list", "GET", path, bob, nil, http.StatusForbidden, "forbidden"},
			{"an unknown id", "GET", path + "/wh_00", alice, nil, http.StatusNotFound, "not_found"},
			{"an id no webhook has", "DELETE", path + "/nope", alice, nil, http.StatusNotFound, "not_found"},
			{"another's webhook", "GET", "/v1/tenants/other/webhooks/" + hook.ID, e.token("olga", "other", false), nil, http.StatusNotFound, "not_found"},
			{"deliveries of none", "GET", path + "/wh_00/deliveries", alice, nil, http.StatusNotFound, "not_found"},
			{"a limit out of range", "GET", path + "/" + hook.ID + "/deliveries?limit=1001", alice, nil, http.StatusBadRequest, "invalid"},
		} {
			r := e.do(c.method, c.path, c.tok, c.body)
			if c.code == "" {
				if r.status != c.status {
					t.Errorf("%s: %d %s, want %d", c.name, r.status, r.body, c.status)
				}
				r.errCode(t)
				continue
			}
			if r.status != c.status || r.errCode(t) != c.code {
				t.Errorf("%s: %d %s, want %d %s", c.name, r.status, r.body, c.status, c.code)
			}
		}
		// A second fits; a third is past webhooks.maxPerTenant.
		e.createWebhook(t, alice, "acme", map[string]any{"url": "http://127.0.0.1:9/b"})
		expect(t, e.do("POST", path, alice, map[string]any{"url": "http://127.0.0.1:9/c"}), http.StatusConflict, "conflict")
		var list api.WebhookList
		e.do("GET", path, alice, nil).json(t, &list)
		if list.Total != 2 || list.Items[0].ID != hook.ID || !slices.Equal(list.Items[0].Types, []string{webhooks.TypeRemoved}) {
			t.Errorf("list: %+v", list)
		}
		// Paused, then removed, it is gone, with its records.
		expect(t, e.do("PATCH", path+"/"+hook.ID, alice, map[string]any{"state": "disabled", "agentIds": []string{"a*"}}), http.StatusOK)
		expect(t, e.do("DELETE", path+"/"+hook.ID, alice, nil), http.StatusNoContent)
		expect(t, e.do("GET", path+"/"+hook.ID+"/deliveries", alice, nil), http.StatusNotFound, "not_found")

		// The trail has each write, and bob's refused one.
		var trail struct {
			Items []struct{ Principal, Action, Object, Detail, Outcome string }
		}
		e.do("GET", "/v1/tenants/acme/audit?object=webhooks", alice, nil).json(t, &trail)
		var got []string
		for _, it := range trail.Items {
			if it.Object == "webhooks" || it.Object == "webhooks/"+hook.ID {
				got = append(got, it.Principal+" "+it.Action+" "+strings.TrimPrefix(it.Object, "webhooks/"+hook.ID)+" "+it.Detail+" "+it.Outcome)
			}
		}
		want := []string{"alice webhooks.remove  removed: http://127.0.0.1:9/a ok",
			`alice webhooks.update  agentIds ["a*"]; state disabled ok`,
			"alice webhooks.create  created: http://127.0.0.1:9/a ok",
			"bob webhooks.create webhooks webhooks:manage denied"}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("trail: %q, want %q", got, want)
		}
	})
}

// freezer is a replica's webhook client that, once frozen, never answers: the replica holds
// its lease and does nothing more, as one killed with SIGKILL (its process gone, its lease left
// in the database). release lets the calls return at the test's end.
type freezer struct {
	inner   webhooks.Doer
	frozen  atomic.Bool
	once    sync.Once
	entered chan struct{}
	release chan struct{}
}

func newFreezer(inner webhooks.Doer) *freezer {
	return &freezer{inner: inner, entered: make(chan struct{}), release: make(chan struct{})}
}

func (f *freezer) Do(r *http.Request) (*http.Response, error) {
	if !f.frozen.Load() {
		return f.inner.Do(r)
	}
	f.once.Do(func() { close(f.entered) })
	<-f.release
	return nil, context.Canceled
}

// waitFor polls cond until it holds, failing the test after limit.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", limit, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// running runs a deliverer as Start does until the returned stop is called, which waits for it.
func running(d *webhooks.Deliverer) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); d.Run(ctx, nil) }()
	return func() { cancel(); <-done }
}

// TestWebhooksTwoReplicas: two replicas on one database, both delivering, send each event once
// (one holds a subscription's lease at a time); when the replica holding it stops dead in the
// middle of a delivery, the other takes over once the lease lapses and delivers everything, the
// change in flight included.
func TestWebhooksTwoReplicas(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, d string) {
		dbs := storagetest.OpenShared(t, d, 2)
		cfg := webhooks.Config{PollInterval: 20 * time.Millisecond, Timeout: 500 * time.Millisecond, Lease: time.Second}
		frozen := newFreezer(outbound.New(outbound.Config{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, Timeout: cfg.Timeout}))
		e1 := newEnvWith(t, dbs[0], envOptions{allowLoopback: true, webhooks: app.WebhookOptions{Config: cfg, Doer: frozen}})
		e2 := newEnvWith(t, dbs[1], envOptions{allowLoopback: true, webhooks: app.WebhookOptions{Config: cfg}})
		e1.mkTenant("acme", "alice")
		alice := e1.token("alice", "acme", false)
		rcv := newReceiver(t)
		e1.createWebhook(t, alice, "acme", map[string]any{"url": rcv.srv.URL})
		stop1, stop2 := running(e1.deliverer), running(e2.deliverer)
		t.Cleanup(func() {
			close(frozen.release)
			stop1()
			stop2()
		})

		// Normal operation: writes on both replicas, each change delivered once.
		for i := range 10 {
			e := []*env{e1, e2}[i%2]
			expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, sampleCard(cardName(i))), http.StatusCreated)
		}
		waitFor(t, 20*time.Second, "ten events", func() bool { return len(rcv.got()) >= 10 })
		time.Sleep(5 * cfg.PollInterval) // time for a second copy to arrive, were one sent
		first := rcv.got()
		if got := subjects(first); len(first) != 10 || !slices.Equal(got, cardNames(0, 10)) {
			t.Fatalf("under normal operation: %q, want each card once, in order", got)
		}

		// Replica 1 alone delivers, and stops dead in the middle of a delivery.
		stop2()
		frozen.frozen.Store(true)
		for i := 10; i < 20; i++ {
			expect(t, e1.do("POST", "/v1/tenants/acme/cards", alice, sampleCard(cardName(i))), http.StatusCreated)
		}
		select {
		case <-frozen.entered:
		case <-time.After(20 * time.Second):
			t.Fatal("replica 1 did not begin a delivery")
		}
		// Another replica takes over once the lease lapses.
		stop2 = running(e2.deliverer)
		waitFor(t, 20*time.Second, "twenty events", func() bool { return len(rcv.got()) >= 20 })
		got := subjects(rcv.got())
		if !slices.Equal(got[:10], cardNames(0, 10)) || !slices.Equal(slices.Compact(got[10:]), cardNames(10, 20)) {
			t.Errorf("after replica 1 stopped: %q, want every card from c10 on, in order", got)
		}
	})
}

func cardName(i int) string { return "c" + itoa(int64(100+i)) }

// cardNames are the names of cards from to to-1.
func cardNames(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, cardName(i))
	}
	return out
}

func subjects(rs []hookEvent) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.event.Subject
	}
	return out
}
