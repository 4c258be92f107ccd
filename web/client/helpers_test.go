package client_test

import (
	"testing"

	"github.com/agentcards/agentcards/web/client"
	"github.com/agentcards/agentcards/web/webtest"
)

// aliceToken is a token of alice in tenant acme, as the service mints them.
func aliceToken(t *testing.T) string {
	return webtest.Mint(t, webtest.Tokens(t), "alice", "acme", false)
}

// newClient is a client of s with alice's token and the options given.
func newClient(t *testing.T, s *webtest.Script, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.New(s.URL, append([]client.Option{client.WithToken(aliceToken(t))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
