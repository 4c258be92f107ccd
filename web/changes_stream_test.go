package web_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/agentcards/agentcards/authz/token"
	"github.com/agentcards/agentcards/cards/search"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/web/api"
	"github.com/agentcards/agentcards/web/client"
	"github.com/agentcards/agentcards/web/webtest"
)

// sseEvent is one Server-Sent Event as a client reads it.
type sseEvent struct {
	id, name, data, signature string
}

// change decodes a change event's data.
func (ev sseEvent) change(t testing.TB) api.CardChange {
	t.Helper()
	if ev.name != "change" {
		t.Fatalf("event %q (%s), want a change", ev.name, ev.data)
	}
	var c api.CardChange
	if err := json.Unmarshal([]byte(ev.data), &c); err != nil {
		t.Fatalf("change %s: %v", ev.data, err)
	}
	return c
}

// sseStream is an open stream of the change feed, read by a goroutine into events.
type sseStream struct {
	resp   *http.Response
	events chan sseEvent
	cancel context.CancelFunc
}

// openStream opens the tenant's change stream after since (none: from now) with the extra
// headers (name, value, ...), and checks its first event, ready.
func (e *env) openStream(t testing.TB, tok, tenant, since string, headers ...string) *sseStream {
	t.Helper()
	s, resp := e.tryStream(t, tok, tenant, since, headers...)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("stream: %d", resp.StatusCode)
	}
	if ev := s.next(t); ev.name != "ready" || ev.id == "" {
		t.Fatalf("first event %+v, want ready with an id", ev)
	}
	return s
}

// tryStream opens a stream and returns it with its answer, whatever the status.
func (e *env) tryStream(t testing.TB, tok, tenant, since string, headers ...string) (*sseStream, *http.Response) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", e.srv.URL+changesPath(tenant, since, 0), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+tok)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	s := &sseStream{resp: resp, events: make(chan sseEvent, 4096), cancel: cancel}
	t.Cleanup(s.close)
	if resp.StatusCode == http.StatusOK {
		go readEvents(bufio.NewReader(resp.Body), s.events)
	}
	return s, resp
}

// readEvents parses Server-Sent Events into out until the stream ends, then closes out.
func readEvents(r *bufio.Reader, out chan<- sseEvent) {
	defer close(out)
	var ev sseEvent
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimSuffix(line, "\n")
		switch name, value, _ := strings.Cut(line, ": "); {
		case line == "":
			if ev.name != "" {
				out <- ev
			}
			ev = sseEvent{}
		case name == "id":
			ev.id = value
		case name == "event":
			ev.name = value
		case name == "data":
			ev.data = value
		case name == "signature":
			ev.signature = value
		}
	}
}

func (s *sseStream) close() {
	s.cancel()
	_ = s.resp.Body.Close()
}

// streamWait bounds how long a test waits for an event that must come.
const streamWait = 10 * time.Second

// next returns the stream's next event.
func (s *sseStream) next(t testing.TB) sseEvent {
	t.Helper()
	select {
	case ev, ok := <-s.events:
		if !ok {
			t.Fatal("the stream ended")
		}
		return ev
	case <-time.After(streamWait):
		t.Fatal("no event within the wait")
	}
	return sseEvent{}
}

// ended waits for the stream's end and returns the events before it.
func (s *sseStream) ended(t testing.TB) []sseEvent {
	t.Helper()
	var out []sseEvent
	deadline := time.After(streamWait)
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				return out
			}
			out = append(out, ev)
		case <-deadline:
			t.Fatalf("the stream did not end; events so far: %+v", out)
		}
	}
}

// nextChange returns the next change, skipping those a client tells as seen by their revision
// (Postgres and MySQL may repeat some), checked against m.
func (s *sseStream) nextChange(t testing.TB, m *mirror) (api.CardChange, string) {
	t.Helper()
	for {
		ev := s.next(t)
		c := ev.change(t)
		if ev.id == "" {
			t.Fatalf("change without an id: %+v", ev)
		}
		_, held := m.card[c.AgentID]
		if rev := m.rev[c.AgentID]; c.Revision < rev || (c.Revision == rev && (c.Op == "upsert" || !held)) {
			continue // seen
		}
		m.apply(t, c)
		return c, ev.id
	}
}

// TestChangesStream: a stream pushes creates, patches and deletes in commit order as they are
// written, each change as a page of cards.changes carries it; Last-Event-ID resumes after the
// last event received with no change missing.
func TestChangesStream(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		alice := e.token("alice", "acme", false)
		base := "/v1/tenants/acme/cards"
		s := e.openStream(t, alice, "acme", "")
		m := newMirror()
		want := func(op, agent string, rev int64) string {
			t.Helper()
			c, id := s.nextChange(t, m)
			if c.Op != op || c.AgentID != agent || c.Revision != rev {
				t.Fatalf("got %s %s@%d, want %s %s@%d", c.Op, c.AgentID, c.Revision, op, agent, rev)
			}
			return id
		}
		expect(t, e.do("POST", base, alice, named("a", "A")), http.StatusCreated)
		want("upsert", "a", 1)
		expect(t, e.do("PATCH", base+"/a", alice, map[string]any{"name": "B"}), http.StatusOK)
		want("upsert", "a", 2)
		expect(t, e.do("DELETE", base+"/a", alice, nil), http.StatusNoContent)
		last := want("remove", "a", 2)
		s.close()

		// Written while no stream is open: the resumed stream catches up, then follows.
		for i := range 3 {
			expect(t, e.do("POST", base, alice, named(fmt.Sprintf("r%d", i), "R")), http.StatusCreated)
		}
		r := e.openStream(t, alice, "acme", "", "Last-Event-ID", last)
		for i := range 3 {
			c, _ := r.nextChange(t, m)
			if c.Op != "upsert" || c.AgentID != fmt.Sprintf("r%d", i) {
				t.Fatalf("resumed: %+v", c)
			}
		}
		expect(t, e.do("POST", base, alice, named("after", "N")), http.StatusCreated)
		if c, _ := r.nextChange(t, m); c.AgentID != "after" {
			t.Fatalf("after the catch-up: %+v", c)
		}
		if got, want := m.names(), e.truth(t, alice, "acme"); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("mirror %v, want %v", got, want)
		}
	})
}

// TestChangesStreamReadRules: a stream carries only the changes of cards its caller may read,
// removals included, as a page does.
func TestChangesStreamReadRules(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		alice := e.token("alice", "acme", false)
		e.grantRule(t, "acme", "carol", "cards/r1", "cards:read", "allow")
		carol := e.token("carol", "acme", false)
		s := e.openStream(t, carol, "acme", "")
		base := "/v1/tenants/acme/cards"
		for _, id := range []string{"h1", "r1", "h2"} {
			expect(t, e.do("POST", base, alice, named(id, "N")), http.StatusCreated)
		}
		expect(t, e.do("DELETE", base+"/h1", alice, nil), http.StatusNoContent)
		expect(t, e.do("DELETE", base+"/r1", alice, nil), http.StatusNoContent)
		// The upsert of r1 may be left out: a change read after the card's removal has no card
		// to carry, and the removal follows.
		m := newMirror()
		for {
			c, _ := s.nextChange(t, m)
			if c.AgentID != "r1" {
				t.Fatalf("carol got %s %s", c.Op, c.AgentID)
			}
			if c.Op == "remove" {
				break
			}
		}
		// Nothing of h1 or h2 follows: a write carol may read comes next.
		expect(t, e.do("POST", base, alice, named("r1", "again")), http.StatusCreated)
		if c, _ := s.nextChange(t, m); c.AgentID != "r1" || c.Op != "upsert" {
			t.Fatalf("carol got %+v", c)
		}
	})
}

// TestChangesStreamLimits: past the streams of a tenant, or of the replica, a stream is refused
// with 429 rate_limited and Retry-After, in the one error body; a stream closed gives its place
// back.
func TestChangesStreamLimits(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, d string) {
		e := newEnvWith(t, storagetest.Open(t, d), envOptions{allowLoopback: true, streams: search.StreamLimits{PerTenant: 2, PerReplica: 3}})
		e.mkTenant("acme", "alice")
		e.mkTenant("beta", "bob")
		alice, bob := e.token("alice", "acme", false), e.token("bob", "beta", false)
		first := e.openStream(t, alice, "acme", "")
		e.openStream(t, alice, "acme", "")
		refused := func(tok, tenant string) {
			t.Helper()
			_, resp := e.tryStream(t, tok, tenant, "")
			r := response{status: resp.StatusCode, header: resp.Header}
			var err error
			if r.body, err = readAll(resp); err != nil {
				t.Fatal(err)
			}
			expect(t, r, http.StatusTooManyRequests, "rate_limited")
			if resp.Header.Get("Retry-After") == "" {
				t.Fatal("429 without Retry-After")
			}
		}
		refused(alice, "acme")
		e.openStream(t, bob, "beta", "")
		refused(bob, "beta") // the replica's bound
		first.close()
		webtest.Eventually(t, streamWait, "the closed stream's place given back", func() bool { return e.streams.Open() == 2 })
		e.openStream(t, alice, "acme", "")
	})
}

// TestChangesStreamSlowReader: a reader that lets more changes wait than the buffer holds is
// dropped; what it reads next ends with a resume event whose cursor resumes with no change
// missing. The queue stays bounded meanwhile.
func TestChangesStreamSlowReader(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, d string) {
		e := newEnvWith(t, storagetest.Open(t, d), envOptions{allowLoopback: true, streams: search.StreamLimits{Buffer: 4}})
		e.mkTenant("acme", "alice")
		alice := e.token("alice", "acme", false)
		// A client that reads nothing, with a small receive buffer: the server's writes block.
		conn, err := net.Dial("tcp", e.srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.(*net.TCPConn).SetReadBuffer(4 << 10)
		// From the present cursor: the stream counts as open before it takes its own present,
		// so a stream opened without one might start after the first writes.
		from := e.changesPage(t, alice, "acme", "", 0).NextCursor
		fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\nAuthorization: Bearer %s\r\n\r\n", changesPath("acme", from, 0), alice)
		big := strings.Repeat("x", 7000)
		webtest.Eventually(t, streamWait, "the stream open", func() bool { return e.streams.Open() == 1 })
		// The server's side of it sends little at a time too.
		e.conns.mu.Lock()
		_ = e.conns.conns[len(e.conns.conns)-1].(*net.TCPConn).SetWriteBuffer(4 << 10)
		e.conns.mu.Unlock()
		written := 0
		for e.streams.Dropped() == 0 {
			if written == 2000 {
				t.Fatal("2000 writes and the reader was not dropped")
			}
			card := named(fmt.Sprintf("c%03d", written), "C")
			card["description"] = big
			expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, card), http.StatusCreated)
			written++
		}
		r := bufio.NewReader(conn)
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatal(err)
		}
		events := make(chan sseEvent, 4096)
		go readEvents(bufio.NewReader(resp.Body), events)
		var all []sseEvent
		for ev := range events {
			all = append(all, ev)
		}
		final := all[len(all)-1]
		if final.name != "resume" || !strings.Contains(final.data, `"reason":"slow"`) || final.id == "" {
			t.Fatalf("last event %+v, want resume for a slow reader", final)
		}
		m := newMirror()
		for _, ev := range all[1 : len(all)-1] {
			m.apply(t, ev.change(t))
		}
		// Resumed from the final event's id, the reader gets every card it missed.
		s := e.openStream(t, alice, "acme", "", "Last-Event-ID", final.id)
		for len(m.names()) < written {
			s.nextChange(t, m)
		}
	})
}

// TestChangesStreamDrain: a server that shuts down ends its streams with a resume event and
// closes them, without waiting for its shutdown timeout; a new stream is refused meanwhile.
func TestChangesStreamDrain(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		alice := e.token("alice", "acme", false)
		s := e.openStream(t, alice, "acme", "")
		expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, named("a", "A")), http.StatusCreated)
		_, id := s.nextChange(t, newMirror())
		ctx, cancel := context.WithTimeout(context.Background(), streamWait)
		defer cancel()
		if err := e.srv.Config.Shutdown(ctx); err != nil {
			t.Fatalf("shutdown: %v", err)
		}
		rest := s.ended(t)
		if len(rest) != 1 || rest[0].name != "resume" || !strings.Contains(rest[0].data, `"reason":"draining"`) || rest[0].id != id {
			t.Fatalf("after the drain: %+v, want one resume event with the last id %s", rest, id)
		}
		if !s.resp.Close {
			t.Error("a stream's connection is kept for another request")
		}
	})
}

// TestChangesStreamReplicas: a write on replica A reaches a stream of replica B, two servers on
// one database running their background work as serve does: on Postgres through LISTEN, with
// the polls an hour apart; elsewhere through B's poll.
func TestChangesStreamReplicas(t *testing.T) {
	storagetest.ForEachDialect(t, func(t *testing.T, d string) {
		db := storagetest.Open(t, d)
		poll := 50 * time.Millisecond
		if d == "postgres" {
			poll = time.Hour
		}
		a := newEnvWith(t, db, envOptions{allowLoopback: true, follow: true, pollInterval: poll})
		b := newEnvWith(t, db, envOptions{allowLoopback: true, follow: true, pollInterval: poll})
		a.mkTenant("acme", "alice")
		alice := a.token("alice", "acme", false)
		s := b.openStream(t, alice, "acme", "")
		m := newMirror()
		for i := range 3 {
			expect(t, a.do("POST", "/v1/tenants/acme/cards", alice, named(fmt.Sprintf("x%d", i), "X")), http.StatusCreated)
			if c, _ := s.nextChange(t, m); c.AgentID != fmt.Sprintf("x%d", i) {
				t.Fatalf("replica B's stream: %+v", c)
			}
		}
	})
}

// readAll reads an answer's body whole.
func readAll(resp *http.Response) ([]byte, error) {
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}

// TestChangesStreamClientWatch: the Go client's Watch yields the changes in order and, when its
// connection breaks, opens the stream again by itself after the last change it yielded, with
// none missing.
func TestChangesStreamClientWatch(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		alice := e.token("alice", "acme", false)
		cl, err := client.New(e.srv.URL, client.WithToken(alice), client.WithHTTPClient(e.srv.Client()))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		// As the slow reader's stream, from the present cursor.
		from := e.changesPage(t, alice, "acme", "", 0).NextCursor
		e.conns.mu.Lock()
		before := len(e.conns.conns)
		e.conns.mu.Unlock()
		got := make(chan api.CardChange, 64)
		done := make(chan error, 1)
		go func() {
			defer close(done)
			for ch, err := range cl.Cards.Watch(ctx, api.CardsChanges{Since: from}) {
				if err != nil {
					done <- err
					return
				}
				got <- ch.CardChange
			}
		}()
		webtest.Eventually(t, streamWait, "the stream open", func() bool { return e.streams.Open() == 1 })
		// The stream's connection is the one accepted since.
		e.conns.mu.Lock()
		stream := slices.Clone(e.conns.conns[before:])
		e.conns.mu.Unlock()
		m := newMirror()
		next := func(agent string) {
			t.Helper()
			for {
				select {
				case c := <-got:
					_, held := m.card[c.AgentID]
					if rev := m.rev[c.AgentID]; c.Revision < rev || (c.Revision == rev && (c.Op == "upsert" || !held)) {
						continue
					}
					m.apply(t, c)
					if c.AgentID != agent {
						t.Fatalf("got %s %s, want %s", c.Op, c.AgentID, agent)
					}
					return
				case err := <-done:
					t.Fatalf("the watch ended: %v", err)
				case <-time.After(streamWait):
					t.Fatalf("no change of %s", agent)
				}
			}
		}
		expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, named("w0", "W")), http.StatusCreated)
		next("w0")
		// The connection breaks; what is written meanwhile comes once the client is back.
		for _, c := range stream {
			_ = c.Close()
		}
		for i := 1; i <= 3; i++ {
			expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, named(fmt.Sprintf("w%d", i), "W")), http.StatusCreated)
		}
		for i := 1; i <= 3; i++ {
			next(fmt.Sprintf("w%d", i))
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("the watch ended with %v", err)
		}
	})
}

// TestChangesStreamOutlivesRequestTimeout: a stream is not bound by server.requestTimeout, nor
// by the server's read timeout (which serve sets to it): it stays open, with keep-alives, and
// carries a change written after both have passed.
func TestChangesStreamOutlivesRequestTimeout(t *testing.T) {
	e := newEnvWith(t, storagetest.Open(t, "sqlite"), envOptions{allowLoopback: true, requestTimeout: 200 * time.Millisecond})
	e.mkTenant("acme", "alice")
	alice := e.token("alice", "acme", false)
	s := e.openStream(t, alice, "acme", "")
	time.Sleep(600 * time.Millisecond) // three request timeouts: the time is what is tested
	expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, named("late", "L")), http.StatusCreated)
	if c, _ := s.nextChange(t, newMirror()); c.AgentID != "late" {
		t.Fatalf("got %+v", c)
	}
}

// TestChangesStreamTokenExpiry: a stream ends when its token does (its exp, plus the leeway),
// with a resume event whose cursor a new token resumes from.
func TestChangesStreamTokenExpiry(t *testing.T) {
	e := newEnv(t, storagetest.Open(t, "sqlite"), 1<<20)
	e.mkTenant("acme", "alice")
	short, err := e.tokens.Mint("alice", "acme", 2*time.Second, false)
	if err != nil {
		t.Fatal(err)
	}
	s := e.openStream(t, short, "acme", "")
	rest := s.ended(t)
	if len(rest) != 1 || rest[0].name != "resume" || !strings.Contains(rest[0].data, `"reason":"token_expired"`) {
		t.Fatalf("events %+v, want one resume for an expired token", rest)
	}
	alice := e.token("alice", "acme", false)
	expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, named("a", "A")), http.StatusCreated)
	r := e.openStream(t, alice, "acme", "", "Last-Event-ID", rest[0].id)
	if c, _ := r.nextChange(t, newMirror()); c.AgentID != "a" {
		t.Fatalf("resumed: %+v", c)
	}
}

// TestChangesStreamSigned: each change event carries the service's signature of its data, which
// a client checks with go-jose against the JWKS the service serves, naming the tenant; the Go
// client's Watch hands it over with the data it covers.
func TestChangesStreamSigned(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *env) {
		e.mkTenant("acme", "alice")
		alice := e.token("alice", "acme", false)
		var keys jose.JSONWebKeySet
		if err := json.Unmarshal(e.jwks(), &keys); err != nil {
			t.Fatal(err)
		}
		start := e.changesPage(t, alice, "acme", "", 0)
		s := e.openStream(t, alice, "acme", "")
		defer s.close()
		expect(t, e.do("POST", "/v1/tenants/acme/cards", alice, named("a", "A")), http.StatusCreated)
		ev := s.next(t)
		ev.change(t)
		jws, err := jose.ParseDetached(ev.signature, []byte(ev.data), []jose.SignatureAlgorithm{jose.ES256, jose.EdDSA})
		if err != nil {
			t.Fatalf("signature %q: %v", ev.signature, err)
		}
		h := jws.Signatures[0].Protected
		found := keys.Key(h.KeyID)
		if len(found) != 1 {
			t.Fatalf("kid %q: %d keys", h.KeyID, len(found))
		}
		if _, err := jws.Verify(found[0].Key); err != nil || h.ExtraHeaders["tenant"] != "acme" {
			t.Fatalf("the event's signature: %v, header %+v", err, h.ExtraHeaders)
		}
		if _, err := token.VerifyDetached(keys, ev.signature, []byte(strings.Replace(ev.data, `"A"`, `"B"`, 1))); err == nil {
			t.Fatal("a changed event verifies")
		}

		cl, err := client.New(e.srv.URL, client.WithToken(alice), client.WithHTTPClient(e.srv.Client()))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		for ch, err := range cl.Cards.Watch(ctx, api.CardsChanges{Since: start.NextCursor}) {
			if err != nil {
				t.Fatal(err)
			}
			if _, err := token.VerifyDetached(keys, ch.Signature, ch.Data); err != nil || ch.AgentID != "a" {
				t.Fatalf("Watch's change %s: %v", ch.AgentID, err)
			}
			break
		}
	})
}
