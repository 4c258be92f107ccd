package client_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/agentcards/agentcards/web/client"
	"github.com/agentcards/agentcards/web/webtest"
)

// exchange is a request as the scripted server received it.
type exchange struct {
	Method, Target, Body string
	Header               http.Header
	At                   time.Time
}

// script is a server whose answers the test writes: answer gets the request and how many came
// before it.
type script struct {
	srv    *httptest.Server
	mu     sync.Mutex
	got    []exchange
	answer func(w http.ResponseWriter, r *http.Request, n int)
}

func newScript(t *testing.T, answer func(w http.ResponseWriter, r *http.Request, n int)) *script {
	s := &script{answer: answer}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		n := len(s.got)
		s.got = append(s.got, exchange{Method: r.Method, Target: r.URL.RequestURI(), Body: string(body), Header: r.Header.Clone(), At: time.Now()})
		s.mu.Unlock()
		s.answer(w, r, n)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// requests returns what the server received so far.
func (s *script) requests() []exchange {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]exchange(nil), s.got...)
}

// aliceToken is a token of alice in tenant acme, as the service mints them.
func aliceToken(t *testing.T) string {
	return webtest.Mint(t, webtest.Tokens(t), "alice", "acme", false)
}

// newClient is a client of s with alice's token and the options given.
func newClient(t *testing.T, s *script, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.New(s.srv.URL, append([]client.Option{client.WithToken(aliceToken(t))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
