package web_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/web/webtest"
)

// chunked is a request with the given chunked body, as raw bytes, since no client would send a
// malformed one.
func chunked(method, path, token, body string) []byte {
	return []byte(method + " " + path + " HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer " + token +
		"\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n" + body)
}

// TestUnreadableBodyIsTheClients: a body that cannot be read because of how the client sent it
// (malformed chunked encoding) is a 400 with the one error body, on every route that reads one,
// and changes nothing; a chunked body over the limit stays 413.
func TestUnreadableBodyIsTheClients(t *testing.T) {
	f := newRouteFixture(t)
	before := f.snapshot(t)
	for _, c := range []struct{ method, path string }{
		{"POST", "/v1/tenants"},
		{"PATCH", "/v1/tenants/acme"},
		{"POST", "/v1/tenants/acme/cards"},
		{"PUT", "/v1/tenants/acme/cards/pub"},
		{"PATCH", "/v1/tenants/acme/cards/pub"},
		{"POST", "/v1/tenants/acme/cards/search"},
		{"POST", "/v1/tenants/acme/cards/import"},
		{"POST", "/v1/tenants/acme/roles"},
		{"POST", "/v1/tenants/acme/policies"},
		{"POST", "/v1/tenants/acme/authorize"},
		{"POST", "/v1/tenants/acme/delegations"},
		{"PUT", "/v1/tenants/acme/cards/pub/secret"},
	} {
		r := f.exchange(t, chunked(c.method, c.path, f.root, "zz\r\nxx\r\n0\r\n\r\n"), c.method)[0]
		expect(t, r, http.StatusBadRequest, "malformed_json")
	}
	for p, want := range before {
		webtest.JSONEqual(t, p+" after the refused writes", f.do("GET", p, f.root, nil).body, want)
	}

	small := newEnv(t, storagetest.Open(t, "sqlite"), 1024)
	big := `{"id": "big", "name": "` + strings.Repeat("x", 2000) + `"}`
	r := small.exchange(t, chunked("POST", "/v1/tenants", small.admin(), fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(big), big)), "POST")[0]
	expect(t, r, http.StatusRequestEntityTooLarge, "too_large")
}

// TestBodyReadPastTheDeadline: a body still unread when the request's time is up is a 503
// timeout, whether the request's deadline or the server's read timeout ends it.
func TestBodyReadPastTheDeadline(t *testing.T) {
	for _, c := range []struct {
		name                     string
		requestTimeout, readTime time.Duration
	}{
		{"request deadline", 50 * time.Millisecond, time.Minute}, // the read bound out of the way
		{"read timeout", time.Minute, time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnvWith(t, storagetest.Open(t, "sqlite"), envOptions{requestTimeout: c.requestTimeout, readTimeout: c.readTime})
			tokens := e.tokens
			conn, err := net.Dial("tcp", e.srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := conn.Write(chunked("POST", "/v1/tenants", webtest.Mint(t, tokens, "root", "", true), "")); err != nil {
				t.Fatal(err)
			}
			if c.readTime == time.Minute {
				// The body comes, malformed, only long after the request's deadline. (With a
				// read timeout the server gives up waiting for it first.)
				time.Sleep(time.Second)
				if _, err := conn.Write([]byte("zz\r\n")); err != nil {
					t.Fatal(err)
				}
			}
			if err := conn.SetDeadline(time.Now().Add(patience)); err != nil {
				t.Fatal(err)
			}
			expect(t, readAnswer(t, bufio.NewReader(conn), "POST", "the answer"), http.StatusServiceUnavailable, "timeout")
		})
	}
}

// TestNonObjectBodies: every route whose body is a JSON object refuses null, an array, a string,
// a number or a boolean with 400 malformed_json, as docs/api.md says, and stores nothing.
func TestNonObjectBodies(t *testing.T) {
	f := newRouteFixture(t)
	before := f.snapshot(t)
	routes := []struct{ method, path string }{
		{"POST", "/v1/tenants"},
		{"PATCH", "/v1/tenants/acme"},
		{"POST", "/v1/tenants/acme/cards"},
		{"PUT", "/v1/tenants/acme/cards/pub"},
		{"PUT", "/v1/tenants/acme/cards/new"},
		{"PATCH", "/v1/tenants/acme/cards/pub"},
		{"POST", "/v1/tenants/acme/cards/search"},
		{"POST", "/v1/tenants/acme/cards/import"},
		{"POST", "/v1/tenants/acme/roles"},
		{"DELETE", "/v1/tenants/acme/roles"},
		{"POST", "/v1/tenants/acme/policies"},
		{"DELETE", "/v1/tenants/acme/policies"},
		{"POST", "/v1/tenants/acme/authorize"},
		{"POST", "/v1/tenants/acme/delegations"},
		{"PUT", "/v1/tenants/acme/cards/pub/secret"},
	}
	for _, c := range routes {
		for _, body := range []string{"null", " null\n", "[]", `[{"agentId": "pub"}]`, `"x"`, "1", "true"} {
			for _, ct := range []string{"application/json", "application/merge-patch+json"} {
				if ct != "application/json" && (c.method != "PATCH" || !strings.Contains(c.path, "/cards/")) { // merge patches are for cards only
					continue
				}
				r := f.do(c.method, c.path, f.root, body, "Content-Type", ct)
				if r.status != http.StatusBadRequest || r.errCode(t) != "malformed_json" {
					t.Errorf("%s %s %q (%s): %d %s, want 400 malformed_json", c.method, c.path, body, ct, r.status, r.body)
				}
			}
		}
	}
	expect(t, f.getCard("acme", "new"), http.StatusNotFound, "not_found")
	for p, want := range before {
		webtest.JSONEqual(t, p+" after the refused writes", f.do("GET", p, f.root, nil).body, want)
	}
}

// TestMemberNamesAreExact: a body member named in another case than the request's, or not one of
// its members at all, is refused with 400 invalid naming every such member (and the name meant),
// on the routes of small bodies as on the card's, and nothing is stored.
func TestMemberNamesAreExact(t *testing.T) {
	f := newRouteFixture(t)
	before := f.snapshot(t)
	for _, c := range []struct{ method, path, body, says string }{
		{"POST", "/v1/tenants/acme/delegations", `{"AgentId": "pub", "capability": "review_pr", "task": "x", "Mode": "sync"}`,
			`AgentId: unknown member (the name is agentId); Mode: unknown member (the name is mode)`},
		{"POST", "/v1/tenants/acme/roles", `{"subject": "zed", "Role": "reader", "until": "never"}`,
			`Role: unknown member (the name is role); until: unknown member`},
		{"POST", "/v1/tenants/acme/cards/search", `{"Q": "review"}`, `Q: unknown member (the name is q)`},
		{"POST", "/v1/tenants/acme/cards", `{"agentID": "new", "name": "New"}`, `agentID`},
	} {
		r := f.do(c.method, c.path, f.root, c.body)
		if r.status != http.StatusBadRequest || r.errCode(t) != "invalid" || !strings.Contains(string(r.body), c.says) {
			t.Errorf("%s %s %s: %d %s, want 400 invalid saying %q", c.method, c.path, c.body, r.status, r.body, c.says)
		}
	}
	expect(t, f.getCard("acme", "new"), http.StatusNotFound, "not_found")
	for p, want := range before {
		webtest.JSONEqual(t, p+" after the refused writes", f.do("GET", p, f.root, nil).body, want)
	}
}
