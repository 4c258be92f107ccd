package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/agentcards/agentcards/authz/fault"
)

// TestErrorTable: every kind of fault has a status, classify answers an error of that kind with
// it, its code and the message written for the client (never the cause's text), and the table
// reads back: the status and code of an answer give the kind again.
func TestErrorTable(t *testing.T) {
	special := map[fault.Kind]bool{fault.Unauthenticated: true, fault.Timeout: true, fault.URLBlocked: true, fault.FetchFailed: true}
	cause := errors.New("dial tcp 10.0.0.7:5432: connection refused")
	for _, k := range fault.Kinds {
		status, ok := statuses[k]
		if !ok {
			t.Errorf("kind %q has no status", k)
			continue
		}
		if got := StatusKind(status, string(k)); got != k {
			t.Errorf("StatusKind(%d, %q) = %q", status, k, got)
		}
		err := fmt.Errorf("context: %w", fault.Wrap(cause, k, "what the client reads"))
		gotStatus, code, msg := classify(err)
		if gotStatus != status || code != string(k) {
			t.Errorf("%s: classified %d %s, want %d %s", k, gotStatus, code, status, k)
		}
		if strings.Contains(msg, "10.0.0.7") || (!special[k] && msg != "what the client reads") {
			t.Errorf("%s: message %q", k, msg)
		}
	}
	for status, code := range echoCodes {
		if k := StatusKind(status, code); k != "" && statuses[k] != status {
			t.Errorf("Echo's %d %s reads back as %q", status, code, k)
		}
	}
	for _, c := range []struct {
		status int
		code   string
	}{{http.StatusInternalServerError, "internal"}, {http.StatusMethodNotAllowed, "method_not_allowed"}, {http.StatusNotFound, "invalid"}, {http.StatusBadRequest, "nonsense"}} {
		if k := StatusKind(c.status, c.code); k != "" {
			t.Errorf("StatusKind(%d, %q) = %q, want none", c.status, c.code, k)
		}
	}
	for _, c := range []struct {
		err          error
		status       int
		code, prefix string
	}{
		{cause, http.StatusInternalServerError, "internal", "internal error"},
		{fmt.Errorf("query: %w", context.DeadlineExceeded), http.StatusServiceUnavailable, "timeout", "the request took too long"},
		{fault.Wrap(context.DeadlineExceeded, fault.NotFound, "card \"x\": not found"), http.StatusNotFound, "not_found", "card"},
		{echo.ErrMethodNotAllowed, http.StatusMethodNotAllowed, "method_not_allowed", "Method Not Allowed"},
		{errNoBearer, http.StatusUnauthorized, "unauthorized", "a bearer token is required"},
	} {
		status, code, msg := classify(c.err)
		if status != c.status || code != c.code || !strings.HasPrefix(msg, c.prefix) {
			t.Errorf("%v: %d %s %q, want %d %s %q...", c.err, status, code, msg, c.status, c.code, c.prefix)
		}
	}
}
