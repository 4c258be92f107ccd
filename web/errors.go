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

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/a2a"
	"github.com/agentcards/agentcards/cards/delegation"
	"github.com/agentcards/agentcards/cards/outbound"
	"github.com/agentcards/agentcards/tenants"
)

// Errors of the HTTP layer itself; domain errors come from the domain packages.
var (
	errMalformed        = errors.New("malformed request")
	errInvalid          = errors.New("invalid request")
	errBodyTooLarge     = errors.New("request body is too large")
	errUnsupportedMedia = errors.New("unsupported media type")
	errUnavailable      = errors.New("service unavailable")
)

// errorCodes is the one table from errors to HTTP status and error code. Order matters where
// chains could hold two: the first match wins.
var errorCodes = []struct {
	err    error
	status int
	code   string
}{
	{authz.ErrUnauthenticated, http.StatusUnauthorized, "unauthorized"},
	{tenants.ErrSuspended, http.StatusForbidden, "tenant_suspended"},
	{delegation.ErrDepthExceeded, http.StatusForbidden, "depth_exceeded"},
	{delegation.ErrBlocked, http.StatusForbidden, "endpoint_blocked"},
	{authz.ErrForbidden, http.StatusForbidden, "forbidden"},
	{delegation.ErrNotFound, http.StatusNotFound, "not_found"},
	{delegation.ErrConflict, http.StatusConflict, "conflict"},
	{delegation.ErrExpired, http.StatusGone, "expired"},
	{delegation.ErrTooLarge, http.StatusRequestEntityTooLarge, "too_large"},
	{delegation.ErrInvalid, http.StatusBadRequest, "invalid"},
	{delegation.ErrRateLimited, http.StatusTooManyRequests, "rate_limited"},
	{delegation.ErrAgentUnavailable, http.StatusServiceUnavailable, "agent_unavailable"},
	{delegation.ErrClosed, http.StatusServiceUnavailable, "unavailable"},
	{tenants.ErrNotFound, http.StatusNotFound, "not_found"},
	{cards.ErrNotFound, http.StatusNotFound, "not_found"},
	{authz.ErrNotFound, http.StatusNotFound, "not_found"},
	{tenants.ErrExists, http.StatusConflict, "conflict"},
	{cards.ErrExists, http.StatusConflict, "conflict"},
	{cards.ErrStale, http.StatusPreconditionFailed, "precondition_failed"},
	{cards.ErrTooLarge, http.StatusRequestEntityTooLarge, "too_large"},
	{errBodyTooLarge, http.StatusRequestEntityTooLarge, "too_large"},
	{errUnsupportedMedia, http.StatusUnsupportedMediaType, "unsupported_media_type"},
	{cards.ErrMalformed, http.StatusBadRequest, "malformed_json"},
	{errMalformed, http.StatusBadRequest, "malformed_json"},
	{cards.ErrInvalid, http.StatusBadRequest, "invalid"},
	{tenants.ErrInvalid, http.StatusBadRequest, "invalid"},
	{authz.ErrInvalid, http.StatusBadRequest, "invalid"},
	{errInvalid, http.StatusBadRequest, "invalid"},
	{a2a.ErrBadSignature, http.StatusBadRequest, "invalid_signature"},
	{outbound.ErrBlocked, http.StatusBadRequest, "blocked_url"},
	{outbound.ErrRedirect, http.StatusBadRequest, "blocked_url"},
	{a2a.ErrFetch, http.StatusBadGateway, "fetch_failed"},
	{errUnavailable, http.StatusServiceUnavailable, "unavailable"},
	{context.DeadlineExceeded, http.StatusServiceUnavailable, "timeout"},
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

// classify maps err to status, code and a message safe to show: domain messages are written by
// us for clients; anything unknown becomes a 500 that says nothing about its cause.
func classify(err error) (int, string, string) {
	for _, row := range errorCodes {
		if errors.Is(err, row.err) {
			msg := err.Error()
			switch row.err {
			case authz.ErrUnauthenticated:
				msg = unauthenticatedMessage(err)
			case context.DeadlineExceeded:
				msg = "the request took too long"
			case outbound.ErrBlocked, outbound.ErrRedirect:
				// The dial error names resolved addresses: not for clients.
				msg = "the URL points to an address or a redirect this server does not fetch"
			case a2a.ErrFetch:
				msg = "the URL could not be fetched"
			}
			return row.status, row.code, msg
		}
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
var errNoBearer = fmt.Errorf("no bearer token: %w", authz.ErrUnauthenticated)

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
func errorHandler(log *slog.Logger, ready func(context.Context) error) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		if c.Response().Committed {
			return
		}
		status, code, msg := classify(err)
		// A client that went away (context.Canceled) hears nothing: no ping for it.
		if status == http.StatusInternalServerError && ready != nil && !errors.As(err, new(*echo.HTTPError)) &&
			!errors.Is(err, context.Canceled) {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Request().Context()), outageCheck)
			if rerr := ready(ctx); rerr != nil {
				err = fmt.Errorf("%w (the database does not answer: %v)", err, rerr)
				status, code, msg = http.StatusServiceUnavailable, "unavailable", "the database is unavailable; try again later"
			}
			cancel()
		}
		if code == "unavailable" {
			c.Response().Header().Set("Retry-After", retryAfter)
		}
		rid := requestID(c)
		if status >= 500 {
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
		body := errorBody{Error: errorDetail{Code: code, Message: msg, RequestID: rid}}
		// Written for HEAD too: net/http drops the body of a HEAD answer but keeps the headers
		// GET would have had, Content-Type and Content-Length included (RFC 9110 §9.3.2).
		if werr := c.JSON(status, body); werr != nil {
			log.Error("write error response", "requestId", rid, "err", werr)
		}
	}
}
