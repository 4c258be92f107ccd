// Package agenttest holds the fake agent of every package's tests: a loopback HTTP server that
// records each request it receives and answers as the test decides, over the POST /task contract
// or as an A2A agent made with a2a-go's own servers (1.0, and 0.3 through a2av0), with its agent
// card at the well-known path, or as the source of a JSON document the test writes (a card, a key
// set). It imports nothing of this module, so the tests of any package (cards/delegation,
// cards/liveness, web, cmd/agentcards) can use it without an import cycle.
package agenttest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
)

// Agent is a fake agent on loopback. Every request it receives is recorded before it is
// answered: by the document ServeJSON set for its path, else by the handler Handle registered
// for it, else by the agent's Reply.
type Agent struct {
	// URL is the agent's base URL, http://127.0.0.1:port.
	URL string

	srv     *httptest.Server
	mux     *http.ServeMux
	closing context.Context // done when the test ends, before the server closes

	mu    sync.Mutex
	reply Reply
	docs  map[string]document // by path
	next  func()              // run on the next request, then dropped
	got   []Request
}

// document is what ServeJSON answers at a path.
type document struct {
	status int
	body   []byte
}

// Request is one request the agent received.
type Request struct {
	Method string
	// Host is the request's Host header: the address the caller sent it to.
	Host   string
	Path   string
	Header http.Header
	Body   []byte
	// Task is the body read as a POST /task body; zero when it is not one.
	Task Task
	// RPC is the body's JSON-RPC method (SendMessage, message/send, ...); "" when it has none.
	RPC string
}

// Task is the body of POST /task, the delegation contract of a card's endpoint.
type Task struct {
	DelegationID string          `json:"delegationId"`
	Task         string          `json:"task"`
	Context      json.RawMessage `json:"context"`
	CallbackURL  string          `json:"callbackUrl"`
}

// Reply answers one request: r is the request as sent, with its body readable again and a
// context that ends when the caller gives up or the test ends; got is what the agent recorded.
type Reply func(w http.ResponseWriter, r *http.Request, got Request)

// New starts an agent that answers every request with reply (nil: 404), and closes it when the
// test ends.
func New(t testing.TB, reply Reply) *Agent {
	closing, stop := context.WithCancel(context.Background())
	a := &Agent{mux: http.NewServeMux(), closing: closing, reply: reply, docs: map[string]document{}}
	a.srv = httptest.NewServer(http.HandlerFunc(a.serve))
	a.URL = a.srv.URL
	t.Cleanup(a.srv.Close)
	// Registered last, so run first: answers that wait for their caller end, and Close need not
	// wait for a caller that never hangs up.
	t.Cleanup(stop)
	return a
}

// Endpoint is the URL a card names as its endpoint to reach the agent over POST /task.
func (a *Agent) Endpoint() string { return a.URL + "/task" }

// SetReply makes reply the answer to the requests that arrive from now on.
func (a *Agent) SetReply(reply Reply) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.reply = reply
}

// Handle serves the requests for pattern (an http.ServeMux pattern) with h instead of the
// agent's Reply; they are recorded all the same.
func (a *Agent) Handle(pattern string, h http.Handler) { a.mux.Handle(pattern, h) }

// ServeJSON answers every request for path (exactly) with status and doc, a JSON document sent
// byte for byte, in place of what was served there before: a card source or a key set whose
// bytes the test writes (a spec sample, a card it signed) and may change between two fetches.
func (a *Agent) ServeJSON(path string, status int, doc []byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.docs[path] = document{status: status, body: bytes.Clone(doc)}
}

// OnNext runs f once, on the next request the agent receives, after recording it and before
// answering it (so f may change the answer): for a change that must happen while a caller waits
// for the agent, such as a write racing a fetch of the card.
func (a *Agent) OnNext(f func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.next = f
}

// Requests returns the requests received so far, oldest first.
func (a *Agent) Requests() []Request {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.got)
}

// Last returns the request received last; zero when there is none yet.
func (a *Agent) Last() Request {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.got) == 0 {
		return Request{}
	}
	return a.got[len(a.got)-1]
}

// Calls is how many requests the agent has received.
func (a *Agent) Calls() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.got)
}

// Count is how many of the requests received so far match.
func (a *Agent) Count(match func(Request) bool) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, r := range a.got {
		if match(r) {
			n++
		}
	}
	return n
}

// serve records r, then answers it.
func (a *Agent) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	got := Request{Method: r.Method, Host: r.Host, Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
	var decoded struct {
		Task
		Method string `json:"method"`
	}
	_ = json.NewDecoder(bytes.NewReader(body)).Decode(&decoded)
	got.Task, got.RPC = decoded.Task, decoded.Method
	a.mu.Lock()
	a.got = append(a.got, got)
	next := a.next
	a.next = nil
	a.mu.Unlock()
	if next != nil {
		next()
	}
	a.mu.Lock()
	reply := a.reply
	doc, served := a.docs[got.Path]
	a.mu.Unlock()

	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(a.closing, cancel)()
	r = r.WithContext(ctx)
	r.Body = io.NopCloser(bytes.NewReader(body))
	if served {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(doc.status)
		_, _ = w.Write(doc.body)
		return
	}
	if _, pattern := a.mux.Handler(r); pattern != "" {
		a.mux.ServeHTTP(w, r)
		return
	}
	if reply == nil {
		http.NotFound(w, r)
		return
	}
	reply(w, r, got)
}

// Answer is a Reply with status and body, as JSON.
func Answer(status int, body string) Reply {
	return func(w http.ResponseWriter, _ *http.Request, _ Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// Hang is a Reply that never answers: it holds each request until the caller gives up or the
// test ends, as an agent that is too slow does.
func Hang(_ http.ResponseWriter, r *http.Request, _ Request) { <-r.Context().Done() }
