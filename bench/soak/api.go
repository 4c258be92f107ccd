package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"sync/atomic"
	"time"

	"github.com/agentcards/agentcards/bench/cardgen"
)

// api is the server's HTTP API.
type api struct {
	client *http.Client
	base   string
}

// maxKept bounds the part of an answer read into memory when the caller wants the body.
const maxKept = 1 << 20

// call sends one request with token and returns the answer's status, and its body when keep is
// set (else the body is read and dropped). err is a failure to exchange at all.
func (a *api) call(method, path, token string, body []byte, keep bool) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, a.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	switch {
	case method == http.MethodPatch:
		req.Header.Set("Content-Type", "application/merge-patch+json")
	case body != nil:
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := a.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	var got []byte
	if keep || res.StatusCode >= 300 {
		got, err = io.ReadAll(io.LimitReader(res.Body, maxKept))
	} else {
		_, err = io.Copy(io.Discard, res.Body)
	}
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s: reading the answer: %w", method, path, err)
	}
	return res.StatusCode, got, nil
}

// must sends a setup request and fails unless the answer is want.
func (a *api) must(method, path, token string, body []byte, want int) error {
	status, got, err := a.call(method, path, token, body, false)
	if err != nil {
		return err
	}
	if status != want {
		return fmt.Errorf("%s %s: %d %s", method, path, status, snippet(got))
	}
	return nil
}

// snippet is the start of an answer's body, for an error message.
func snippet(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) > 200 {
		return string(b[:200]) + "..."
	}
	return string(b)
}

// card is a seeded card: its id, its document, and a capability it declares.
type card struct {
	agentID, capability string
	doc                 []byte
}

// tenant is one tenant of the load, with its users' tokens and its seeded cards.
type tenant struct {
	id string
	// editor may read, write, delete and heartbeat cards; orchestrator may read and delegate.
	editor, orchestrator string
	cards                []card
	// capabilities and tags found on the seeded cards, for filtered searches.
	capabilities, tags []string
	// seed makes the tenant's new cards, endpoint their agent's URL.
	seed     uint64
	endpoint func(agentID string) string
}

// newCard is the k-th card a client registers in t, with id agentID.
func (t *tenant) newCard(agentID string, k int) []byte {
	c := cardgen.Make(t.seed+1000, k)
	c.AgentID, c.Endpoint = agentID, t.endpoint(agentID)
	doc, err := json.Marshal(c)
	if err != nil {
		panic(err) // plain structs of strings always encode
	}
	return doc
}

// seedBatch keeps a batch of generated cards (at most ~3.5 KB each) under the default
// server.bodyLimit of 1 MiB.
const seedBatch = 200

// setupTenant creates tenant soak-<i> with users ed (editor) and olga (orchestrator), mints
// their tokens, and registers n generated cards whose endpoint is the loopback agent at
// agentBase.
func setupTenant(a *api, bin, work string, env []string, admin string, ttl time.Duration, i, n int, agentBase string) (*tenant, error) {
	t := &tenant{id: fmt.Sprintf("soak-%d", i), seed: uint64(100 + i)}
	t.endpoint = func(agentID string) string { return agentBase + "/agents/" + t.id + "/" + agentID + "/task" }
	body, _ := json.Marshal(map[string]any{"id": t.id, "name": "soak " + t.id, "admins": []string{"alice"}})
	if err := a.must(http.MethodPost, "/v1/tenants", admin, body, http.StatusCreated); err != nil {
		return nil, err
	}
	for _, g := range []struct{ subject, role string }{{"ed", "editor"}, {"olga", "orchestrator"}} {
		body, _ := json.Marshal(map[string]string{"subject": g.subject, "role": g.role})
		if err := a.must(http.MethodPost, "/v1/tenants/"+t.id+"/roles", admin, body, http.StatusCreated); err != nil {
			return nil, err
		}
	}
	var err error
	if t.editor, err = mint(bin, work, env, ttl, "--subject", "ed", "--tenant", t.id); err != nil {
		return nil, err
	}
	if t.orchestrator, err = mint(bin, work, env, ttl, "--subject", "olga", "--tenant", t.id); err != nil {
		return nil, err
	}
	caps, tags := map[string]bool{}, map[string]bool{}
	t.cards = make([]card, n)
	for j := range t.cards {
		c := cardgen.Make(t.seed, j)
		c.Endpoint = t.endpoint(c.AgentID)
		doc, err := json.Marshal(c)
		if err != nil {
			return nil, err
		}
		t.cards[j] = card{agentID: c.AgentID, capability: c.Capabilities[0].Name, doc: doc}
		for _, cp := range c.Capabilities {
			caps[cp.Name] = true
		}
		for _, tg := range c.Tags {
			tags[tg] = true
		}
	}
	t.capabilities, t.tags = keys(caps), keys(tags)
	for rest := t.cards; len(rest) > 0; {
		part := rest[:min(seedBatch, len(rest))]
		rest = rest[len(part):]
		docs := make([][]byte, len(part))
		for j, c := range part {
			docs[j] = c.doc
		}
		body := append(append([]byte("["), bytes.Join(docs, []byte(","))...), ']')
		if err := a.must(http.MethodPost, "/v1/tenants/"+t.id+"/cards:batch", t.editor, body, http.StatusCreated); err != nil {
			return nil, err
		}
	}
	return t, nil
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// agent is the loopback agent every card's endpoint names: it answers each task at once.
type agent struct {
	srv   *http.Server
	base  string
	calls atomic.Int64
}

func startAgent() (*agent, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	ag := &agent{base: "http://" + ln.Addr().String()}
	ag.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ag.calls.Add(1)
		_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, maxKept))
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"result": {"ok": true, "summary": "done"}}`)
	})}
	go func() {
		if err := ag.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			progress("agent: %v", err)
		}
	}()
	return ag, nil
}

func (ag *agent) close() { _ = ag.srv.Close() }
