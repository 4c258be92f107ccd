package web

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/labstack/echo/v4"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/tenants"
)

// kindUnsupportedMedia is the one failure of the HTTP layer that no domain kind names: a body
// whose Content-Type the route does not take.
const kindUnsupportedMedia fault.Kind = "unsupported_media_type"

// statuses is the one table from a kind of failure to its HTTP status; the kind is the error
// code of the body. StatusKind reads it the other way.
var statuses = map[fault.Kind]int{
	fault.Invalid:      http.StatusBadRequest,
	fault.Malformed:    http.StatusBadRequest,
	fault.BadSignature: http.StatusBadRequest,
	fault.URLBlocked:   http.StatusBadRequest,
	// A2A answers its VersionNotSupportedError with 400 over HTTP (spec 1.0, error mappings).
	fault.VersionNotSupported: http.StatusBadRequest,
	fault.Unauthenticated:     http.StatusUnauthorized,
	fault.Forbidden:           http.StatusForbidden,
	fault.Suspended:           http.StatusForbidden,
	fault.DepthExceeded:       http.StatusForbidden,
	fault.EndpointBlocked:     http.StatusForbidden,
	fault.NotFound:            http.StatusNotFound,
	fault.Conflict:            http.StatusConflict,
	fault.CardDisabled:        http.StatusConflict,
	fault.AgentOffline:        http.StatusConflict,
	fault.Lockout:             http.StatusConflict,
	fault.Expired:             http.StatusGone,
	fault.CursorExpired:       http.StatusGone,
	fault.Stale:               http.StatusPreconditionFailed,
	fault.TooLarge:            http.StatusRequestEntityTooLarge,
	kindUnsupportedMedia:      http.StatusUnsupportedMediaType,
	fault.RateLimited:         http.StatusTooManyRequests,
	fault.FetchFailed:         http.StatusBadGateway,
	fault.AgentUnavailable:    http.StatusServiceUnavailable,
	fault.Unavailable:         http.StatusServiceUnavailable,
	fault.Timeout:             http.StatusServiceUnavailable,
}

// StatusKind is the kind of failure an error answer of the API names: its status and code
// through the table classify writes them with. It is "" for an answer no kind gives (500
// internal, Echo's 405).
func StatusKind(status int, code string) fault.Kind {
	if k := fault.Kind(code); statuses[k] == status {
		return k
	}
	return ""
}

// echoCodes names the errors Echo itself raises (no route, wrong method, its own timeouts).
var echoCodes = map[int]string{
	http.StatusNotFound:              "not_found",
	http.StatusMethodNotAllowed:      "method_not_allowed",
	http.StatusRequestEntityTooLarge: "too_large",
	http.StatusUnsupportedMediaType:  "unsupported_media_type",
	http.StatusServiceUnavailable:    "timeout",
	http.StatusBadRequest:            "invalid",
	http.StatusUnauthorized:          "unauthorized",
}

// errorBody is the one error shape of the API.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	RequestID string `json:"requestId"`
}

// flatErrorBody is the error body of the requests of a registry's compatible door
// (catalog.Request.FlatErrors): that registry's {"error": message}, with the code and the
// request's id beside it.
type flatErrorBody struct {
	Error     string `json:"error"`
	Code      string `json:"code"`
	RequestID string `json:"requestId"`
}

// flatErrorsKey marks, in the echo.Context, a request whose errors are answered flat.
const flatErrorsKey = "agentcards.flatErrors"

// flatErrors makes the route's errors answer the flat body: set first, so that the route's
// authentication answers it too.
func flatErrors(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Set(flatErrorsKey, true)
		return next(c)
	}
}

// classify maps err to status, code and a message safe to show: the message of its kind, which
// the domain writes for clients, except where this door knows better (a refused token, a
// deadline, a fetch); an error of no kind becomes a 500 that says nothing about its cause.
func classify(err error) (int, string, string) {
	kind := fault.KindOf(err)
	if kind == "" && errors.Is(err, context.DeadlineExceeded) {
		kind = fault.Timeout
	}
	if status, ok := statuses[kind]; ok {
		msg := fault.MessageOf(err)
		switch kind {
		case fault.Unauthenticated:
			msg = unauthenticatedMessage(err)
		case fault.Timeout:
			msg = "the request took too long"
		case fault.URLBlocked:
			// The guard refused an address or a redirect: which one is for the log.
			msg = "the URL points to an address or a redirect this server does not fetch"
		case fault.FetchFailed:
			msg = "the URL could not be fetched"
		}
		return status, string(kind), msg
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		if code, ok := echoCodes[he.Code]; ok {
			return he.Code, code, http.StatusText(he.Code)
		}
	}
	return http.StatusInternalServerError, "internal", "internal error"
}

// errNoBearer is a request to an authenticated route without a bearer token.
var errNoBearer = fault.New(fault.Unauthenticated, "no bearer token: authentication required")

// unauthenticatedMessage says why a token was refused, as far as a client may know: missing,
// expired, not valid yet, or not valid here (signature, algorithm, issuer, audience or claims,
// which are told apart only in the server's log).
func unauthenticatedMessage(err error) string {
	switch {
	case errors.Is(err, errNoBearer):
		return "a bearer token is required (Authorization: Bearer <token>)"
	case errors.Is(err, jwt.ErrTokenExpired):
		return "the bearer token has expired"
	case errors.Is(err, jwt.ErrTokenNotValidYet), errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return "the bearer token is not valid yet"
	}
	return "the bearer token is not valid for this server"
}

// outageCheck bounds the database check of a failed request (see errorHandler).
const outageCheck = time.Second

// retryAfter is what an answer says when the database is unavailable: a client may try again in
// this many seconds.
const retryAfter = "5"

// errorHandler writes every error as the one error body, and logs server-side failures. A failure
// that is no known error is a bug (500), unless the database does not answer (ready says so,
// within outageCheck): then it is 503 unavailable with Retry-After, whatever the driver's error
// looked like, on every dialect.
func errorHandler(log *slog.Logger, ready func(context.Context) error, outage *outageLog) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		if c.Response().Committed {
			return
		}
		status, code, msg := classify(err)
		// The database does not answer: said once for the outage, not for every request.
		// So is a request refused without asking it (found down a moment ago), and one the tenant
		// gate found it down for (marked stale) that memory could not answer.
		dbDown := errors.As(err, new(notReady)) || errors.Is(err, tenants.ErrDown) ||
			(code == string(fault.Unavailable) && tenants.Stale(c.Request().Context()))
		// A client that went away (context.Canceled) hears nothing: no ping for it.
		if status == http.StatusInternalServerError && ready != nil && !errors.As(err, new(*echo.HTTPError)) &&
			!errors.Is(err, context.Canceled) {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Request().Context()), outageCheck)
			if rerr := ready(ctx); rerr != nil {
				err = fmt.Errorf("%w (the database does not answer: %v)", err, rerr)
				status, code, msg = statuses[fault.Unavailable], string(fault.Unavailable), "the database is unavailable; try again later"
				dbDown = true
			} else {
				outage.wrote()
			}
			cancel()
		}
		if code == string(fault.Unavailable) {
			c.Response().Header().Set("Retry-After", retryAfter)
		}
		rid := requestID(c)
		switch {
		case dbDown:
			outage.fail(err, rid, c.Request().Method, c.Request().URL.Path)
		case status >= 500:
			log.Error("request failed", "requestId", rid, "method", c.Request().Method,
				"path", c.Request().URL.Path, "status", status, "err", err)
		}
		if status == http.StatusUnauthorized {
			challenge := `Bearer realm="agentcards"`
			if !errors.Is(err, errNoBearer) {
				challenge += `, error="invalid_token"` // RFC 6750: a token was sent and refused
			}
			c.Response().Header().Set("WWW-Authenticate", challenge)
		}
		var body any = errorBody{Error: errorDetail{Code: code, Message: msg, RequestID: rid}}
		if flat, _ := c.Get(flatErrorsKey).(bool); flat {
			body = flatErrorBody{Error: msg, Code: code, RequestID: rid}
		}
		// Written for HEAD too: net/http drops the body of a HEAD answer but keeps the headers
		// GET would have had, Content-Type and Content-Length included (RFC 9110 §9.3.2).
		if werr := c.JSON(status, body); werr != nil {
			log.Error("write error response", "requestId", rid, "err", werr)
		}
	}
}

// notReady is /ready's refusal: the database did not answer its ping.
type notReady struct{ error }

func (e notReady) Unwrap() error { return e.error }
