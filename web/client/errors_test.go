package client_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentcards/agentcards/web/api"
	"github.com/agentcards/agentcards/web/client"
	"github.com/agentcards/agentcards/web/webtest"
)

// TestErrorsAnswered: an answer of 300 or more is an *Error naming the request, with the status
// and the code, message and request id of the service's error body, and the Retry-After asked
// for (whole seconds); an answer that is not the error body is unexpected_response, with the
// status line and the start of the body. A success whose body is not the JSON expected is
// unexpected_response too.
func TestErrorsAnswered(t *testing.T) {
	long := strings.Repeat("x", 300)
	for _, c := range []struct {
		name   string
		status int
		body   string
		header []string
		want   client.Error
		text   string
	}{
		{name: "error body", status: 404, body: `{"error": {"code": "not_found", "message": "card \"rev\" not found", "requestId": "req-7"}}`,
			want: client.Error{Request: "cards.get", Status: 404, Code: "not_found", Message: `card "rev" not found`, RequestID: "req-7"},
			text: `cards.get: card "rev" not found (404 not_found)`},
		{name: "retry after", status: 429, body: `{"error": {"code": "rate_limited", "message": "too many requests"}}`, header: []string{"Retry-After", "7"},
			want: client.Error{Request: "cards.get", Status: 429, Code: "rate_limited", Message: "too many requests", RetryAfter: 7 * time.Second}},
		{name: "retry after as a date", status: 503, body: `{"error": {"code": "unavailable", "message": "down"}}`,
			header: []string{"Retry-After", "Wed, 21 Oct 2026 07:28:00 GMT"},
			want:   client.Error{Request: "cards.get", Status: 503, Code: "unavailable", Message: "down"}},
		{name: "negative retry after", status: 503, body: `{"error": {"code": "unavailable", "message": "down"}}`, header: []string{"Retry-After", "-3"},
			want: client.Error{Request: "cards.get", Status: 503, Code: "unavailable", Message: "down"}},
		{name: "not the error body", status: 502, body: "<html>bad gateway</html>\n",
			want: client.Error{Request: "cards.get", Status: 502, Code: "unexpected_response", Message: "502 Bad Gateway <html>bad gateway</html>"},
			text: "cards.get: 502 Bad Gateway <html>bad gateway</html> (502 unexpected_response)"},
		{name: "an error body without a code", status: 400, body: `{"error": {"message": "no code"}}`,
			want: client.Error{Request: "cards.get", Status: 400, Code: "unexpected_response", Message: `400 Bad Request {"error": {"message": "no code"}}`}},
		{name: "a long body", status: 500, body: long,
			want: client.Error{Request: "cards.get", Status: 500, Code: "unexpected_response", Message: "500 Internal Server Error " + long[:200]}},
		{name: "a redirect", status: 304, body: "",
			want: client.Error{Request: "cards.get", Status: 304, Code: "unexpected_response", Message: "304 Not Modified"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := webtest.StartScript(t, func(w http.ResponseWriter, _ *http.Request, _ int) { webtest.Reply(w, c.status, c.body, c.header...) })
			_, err := newClient(t, s).Cards.Get(context.Background(), api.CardRef{AgentID: "rev"})
			var ce *client.Error
			if !errors.As(err, &ce) {
				t.Fatalf("%v is not a *client.Error", err)
			}
			if *ce != c.want {
				t.Errorf("%+v, want %+v", *ce, c.want)
			}
			if c.text != "" && ce.Error() != c.text {
				t.Errorf("its text %q, want %q", ce.Error(), c.text)
			}
		})
	}

	s := webtest.StartScript(t, func(w http.ResponseWriter, _ *http.Request, _ int) { webtest.Reply(w, http.StatusOK, `{"agentId": 7}`) })
	_, err := newClient(t, s).Cards.Get(context.Background(), api.CardRef{AgentID: "rev"})
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Status != 200 || ce.Code != "unexpected_response" ||
		!strings.HasPrefix(ce.Message, "the answer is not the JSON expected: ") {
		t.Errorf("a 200 that does not decode: %#v", err)
	}
}
