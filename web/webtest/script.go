package webtest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"
)

// Exchange is one request a Script received.
type Exchange struct {
	Method string
	// Target is the request's target as sent: its path and query.
	Target string
	Body   string
	Header http.Header
	// At is when the request arrived.
	At time.Time
}

// Answer answers one request to a Script: n is how many requests came before it.
type Answer func(w http.ResponseWriter, r *http.Request, n int)

// Script stands in for the REST API in the tests of the doors that call it (the Go client, the
// MCP door): it records each request, then answers it as the test's Answer does. It is an
// http.Handler, and Start serves it on loopback, as httptest.Server is unstarted or started.
type Script struct {
	// URL is the base URL of the loopback server Start started; "" for a Script used as a
	// handler only.
	URL string

	answer Answer
	mu     sync.Mutex
	got    []Exchange
}

// NewScript is a Script that answers with answer.
func NewScript(answer Answer) *Script { return &Script{answer: answer} }

// StartScript is NewScript(answer), started.
func StartScript(t testing.TB, answer Answer) *Script { return NewScript(answer).Start(t) }

// Start serves s on loopback until the test ends, sets its URL and returns it; once for a Script,
// before its first request.
func (s *Script) Start(t testing.TB) *Script {
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// ServeHTTP records r, then answers it.
func (s *Script) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body []byte
	if r.Body != nil {
		body, _ = io.ReadAll(r.Body)
	}
	s.mu.Lock()
	n := len(s.got)
	s.got = append(s.got, Exchange{Method: r.Method, Target: r.URL.RequestURI(), Body: string(body), Header: r.Header.Clone(), At: time.Now()})
	s.mu.Unlock()
	s.answer(w, r, n)
}

// Requests returns the requests received so far, oldest first.
func (s *Script) Requests() []Exchange {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.got)
}
