package web

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/authz/token"
	"github.com/agentcards/agentcards/tenants"
)

const requestIDKey = "requestId"

// fromMemoryKey marks a request that memory may answer (withStaleMark): its success says nothing
// of the database.
const fromMemoryKey = "fromMemory"

// incomingRequestID accepts a caller's X-Request-Id only when it is short and plain, so it is safe
// to echo into logs and headers.
var incomingRequestID = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,64}$`)

func requestID(c echo.Context) string {
	id, _ := c.Get(requestIDKey).(string)
	return id
}

// HeaderStale marks an answer made of what the server held in memory while its database did not
// answer (the tenant row and policy as last read, the search index, cards it had encoded): it
// may miss writes made meanwhile on other replicas.
const HeaderStale = "X-Agentcards-Stale"

// staleValue is HeaderStale's value.
const staleValue = "database unavailable; answered from memory"

// withStaleMark lets a read be answered from memory while the database does not answer
// (tenants.WithStaleMark; a write never is), and says so in HeaderStale on a successful answer,
// which no cache may then keep.
func withStaleMark(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		ctx, stale := tenants.WithStaleMark(c.Request().Context())
		c.SetRequest(c.Request().WithContext(ctx))
		c.Set(fromMemoryKey, true)
		res := c.Response()
		res.Before(func() {
			if stale() && res.Status < http.StatusBadRequest {
				res.Header().Set(HeaderStale, staleValue)
				res.Header().Set(echo.HeaderCacheControl, "no-store")
			}
		})
		return next(c)
	}
}

// withRequestID tags each request with an id, taken from X-Request-Id when sane, and echoes it.
func withRequestID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		id := c.Request().Header.Get(echo.HeaderXRequestID)
		if !incomingRequestID.MatchString(id) {
			var b [12]byte
			_, _ = rand.Read(b[:])
			id = hex.EncodeToString(b[:])
		}
		c.Set(requestIDKey, id)
		c.Response().Header().Set(echo.HeaderXRequestID, id)
		return next(c)
	}
}

// recoverPanics turns a panic into a 500 that says nothing of its cause; the stack goes to the log.
func recoverPanics(log *slog.Logger) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) (err error) {
			defer func() {
				if r := recover(); r != nil {
					if r == http.ErrAbortHandler {
						panic(r)
					}
					log.Error("panic", "requestId", requestID(c), "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
					err = errors.New("panic recovered")
				}
			}()
			return next(c)
		}
	}
}

// logRequests writes one line per request.
func logRequests(log *slog.Logger, outage *outageLog) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			err := next(c)
			if err != nil {
				c.Error(err)
			} else if c.Response().Header().Get(HeaderStale) != "" {
				outage.answeredStale(requestID(c), c.Request().Method, c.Request().URL.Path)
			} else if m := c.Request().Method; m != http.MethodGet && m != http.MethodHead && m != http.MethodOptions &&
				c.Response().Status < 400 && c.Path() != mcpPath && c.Get(fromMemoryKey) == nil {
				// A write went through: the database answers. (An MCP call answers 200 whatever its
				// tools met, so it says nothing of the database; nor does a read by POST that
				// memory may answer, such as a search, or a CORS preflight, which asks it nothing.)
				outage.wrote()
			}
			log.Info("request", "requestId", requestID(c), "method", c.Request().Method,
				"path", c.Request().URL.Path, "status", c.Response().Status,
				"duration", time.Since(start).Round(time.Microsecond))
			return nil
		}
	}
}

// limitBody refuses bodies over limit bytes: at once when Content-Length says so, else while reading.
func limitBody(limit int64) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			if req.ContentLength > limit {
				return fault.Errorf(fault.TooLarge, "the body is over %d bytes: request body is too large", limit)
			}
			req.Body = http.MaxBytesReader(c.Response(), req.Body, limit)
			return next(c)
		}
	}
}

// strictQuery refuses a query string that does not parse. net/url drops the pairs it cannot
// decode (a bad %-escape, an unescaped ';'), and a search whose tag= vanished that way would
// silently widen instead of failing.
func strictQuery(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if err := checkQuery(c.Request().URL.RawQuery); err != nil {
			return err
		}
		return next(c)
	}
}

// checkQuery reports the first pair of a raw query string that net/url would drop, naming it.
func checkQuery(raw string) error {
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		if pair == "" {
			continue
		}
		name, value, _ := strings.Cut(pair, "=")
		shown := name
		if n, err := url.QueryUnescape(name); err == nil {
			shown = n
		}
		if strings.Contains(pair, ";") {
			return fault.Errorf(fault.Invalid, "query parameter %q: a ';' must be percent-encoded (%%3B): invalid request", shown)
		}
		if _, err := url.QueryUnescape(name); err != nil {
			return fault.Errorf(fault.Invalid, "query parameter %q: the name is not valid percent-encoding: invalid request", shown)
		}
		if _, err := url.QueryUnescape(value); err != nil {
			return fault.Errorf(fault.Invalid, "query parameter %q: the value is not valid percent-encoding: invalid request", shown)
		}
	}
	return nil
}

// acceptQuery refuses a query parameter that is not among names, naming it, so that a misspelt
// or misplaced one (?limt=5, ?version= on a REST card) is a 400 instead of silently ignored.
// Routes declare what they take when they are registered (routes.add); none means none.
func acceptQuery(names []string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if c.Request().URL.RawQuery == "" {
				return next(c)
			}
			var unknown []string
			for name := range c.QueryParams() {
				if !slices.Contains(names, name) {
					unknown = append(unknown, name)
				}
			}
			if len(unknown) > 0 {
				// Of several, the same one is named every time.
				return fault.Errorf(fault.Invalid, "unknown query parameter %q: invalid request", slices.Min(unknown))
			}
			return next(c)
		}
	}
}

// readBody returns the request body after checking its media type against allowed. A body that
// cannot be read is the client's doing (malformed chunked encoding, a body cut short: 400), unless
// it is over the limit (413) or its time ran out first (503 timeout): the request's deadline,
// which does not interrupt a read but is checked after one fails, or the server's read timeout.
func readBody(c echo.Context, allowed ...string) ([]byte, error) {
	if err := acceptMedia(c, allowed); err != nil {
		return nil, err
	}
	body, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return nil, bodyError(c, err)
	}
	return body, nil
}

// readBodyInto is readBody into buf (emptied first), for the large bodies of batches.
func readBodyInto(c echo.Context, buf *bytes.Buffer, allowed ...string) error {
	if err := acceptMedia(c, allowed); err != nil {
		return err
	}
	buf.Reset()
	if _, err := buf.ReadFrom(c.Request().Body); err != nil {
		return bodyError(c, err)
	}
	return nil
}

// acceptMedia refuses a body whose Content-Type is none of allowed.
func acceptMedia(c echo.Context, allowed []string) error {
	ct := c.Request().Header.Get(echo.HeaderContentType)
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || !contains(allowed, strings.ToLower(mt)) {
		return fault.Errorf(kindUnsupportedMedia, "Content-Type must be %s: unsupported media type", strings.Join(allowed, " or "))
	}
	return nil
}

// bodyError is the error of a body that could not be read: too large, too slow, or cut short.
func bodyError(c echo.Context, err error) error {
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return fault.Errorf(fault.TooLarge, "the body is over %d bytes: request body is too large", tooLarge.Limit)
	case errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, context.DeadlineExceeded),
		errors.Is(c.Request().Context().Err(), context.DeadlineExceeded):
		return fault.Wrap(err, fault.Timeout, "the body was not received in time")
	}
	// The cause (net/http's words, maybe addresses) stays out of the message.
	return fault.New(fault.Malformed, "the body could not be read as sent (malformed chunked encoding, or cut short): malformed request")
}

// readObject is readBody for routes whose body is a JSON object. Any other JSON value is
// malformed_json, like a body that is not JSON: decoded into a Go struct, null would pass for {}
// (a PATCH that writes nothing but a new updatedAt, a search without filters).
func readObject(c echo.Context, allowed ...string) ([]byte, error) {
	body, err := readBody(c, allowed...)
	if err != nil {
		return nil, err
	}
	// An empty body is left to the decoder, which says so.
	if v := bytes.TrimLeft(body, " \t\r\n"); len(v) > 0 && v[0] != '{' {
		return nil, fault.Errorf(fault.Malformed, "the body must be a JSON object, not %s: malformed request", jsonKind(v[0]))
	}
	return body, nil
}

// jsonKind names the kind of JSON value that starts with b.
func jsonKind(b byte) string {
	switch {
	case b == 'n':
		return "null"
	case b == '[':
		return "an array"
	case b == '"':
		return "a string"
	case b == 't', b == 'f':
		return "a boolean"
	case b == '-', b >= '0' && b <= '9':
		return "a number"
	}
	return "JSON"
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// tokenVerifier turns a bearer token into a principal.
type tokenVerifier func(raw string) (authz.Principal, error)

// delegationTokens verifies the delegation tokens the service signed, so that an agent can
// delegate further with the token it was called with, one level deeper; nil when the service
// has no keys or delegates nothing.
func (h *handlers) delegationTokens() tokenVerifier {
	if h.ServiceKeys == nil || h.Delegations == nil {
		return nil
	}
	issuer, leeway := h.Delegations.Issuer(), h.Delegations.Leeway()
	return func(raw string) (authz.Principal, error) {
		return h.ServiceKeys.VerifyDelegation(raw, issuer, leeway, nil)
	}
}

// authenticate requires a valid bearer token (a user's, or a delegation token we signed) and puts
// its principal in the request context. What a delegation token may open is the services'
// decision (authz.Caller, authz.Delegator), not the route's: every door shares it.
func authenticate(tokens *token.Tokens, delegationTokens tokenVerifier, log *slog.Logger) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			h := c.Request().Header.Get(echo.HeaderAuthorization)
			scheme, raw, ok := strings.Cut(h, " ")
			if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(raw) == "" {
				return errNoBearer
			}
			raw = strings.TrimSpace(raw)
			p, err := tokens.Verify(raw)
			if err != nil && delegationTokens != nil {
				if dp, derr := delegationTokens(raw); derr == nil {
					p, err = dp, nil
				}
			}
			if err != nil {
				log.Info("token refused", "requestId", requestID(c), "err", err)
				return err
			}
			req := c.Request()
			c.SetRequest(req.WithContext(authz.WithPrincipal(req.Context(), p)))
			return next(c)
		}
	}
}
