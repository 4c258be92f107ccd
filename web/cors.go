package web

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/web/api"
)

// Browsers at the door. A page of another origin may call the API only from the origins the
// operator lists (Config.CORSOrigins, off by default): CORS answers their preflights and lets
// them read the answers. The MCP transport asks more of /mcp (spec 2025-06-18, streamable HTTP):
// a browser request from an origin it does not admit is refused outright, so that a page whose
// host name was rebound to this server's address (DNS rebinding) cannot drive it. Requests
// without Origin, from programs rather than browsers, pass.

// corsMaxAge is how long a browser may keep a granted preflight, in seconds.
const corsMaxAge = 600

// corsAllowHeaders are the request headers a page may send: what the API reads.
var corsAllowHeaders = []string{echo.HeaderAuthorization, echo.HeaderContentType, "If-Match", "If-None-Match",
	headerA2AVersion, echo.HeaderXRequestID}

// corsMCPHeaders are the MCP transport's own request headers, allowed at /mcp besides.
var corsMCPHeaders = []string{"Mcp-Session-Id", "MCP-Protocol-Version", "Last-Event-ID"}

// corsExposeHeaders are the answer headers beyond the CORS-safelisted ones a page may read.
var corsExposeHeaders = []string{"ETag", echo.HeaderLocation, echo.HeaderXRequestID, echo.HeaderRetryAfter,
	HeaderA2ACardVersion, HeaderStale, api.SignatureHeader}

// ParseOrigin reads a browser origin as browsers send it, scheme://host[:port] (http or https,
// no path, query or user), and returns it in their form: lower-case, no default port.
func ParseOrigin(s string) (string, error) {
	u, err := url.Parse(strings.TrimSuffix(s, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" ||
		u.Fragment != "" || u.User != nil || u.Opaque != "" {
		return "", fmt.Errorf("origin %q is not scheme://host[:port] with scheme http or https", s)
	}
	scheme, host, port := strings.ToLower(u.Scheme), strings.ToLower(u.Hostname()), u.Port()
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return "", fmt.Errorf("origin %q has no valid port", s)
		}
	}
	if port == "" || (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		return scheme + "://" + host, nil
	}
	return scheme + "://" + host + ":" + port, nil
}

// origins are the origins of browser pages admitted: by CORS, those the operator lists; at /mcp,
// those and the server's own (its public URL's, where its console is served).
type origins struct {
	listed map[string]bool
	self   string
}

// newOrigins reads the configured origins; New panics on one that does not parse (the
// configuration's check refuses it first).
func newOrigins(cfg Config) origins {
	o := origins{listed: map[string]bool{}}
	for _, s := range cfg.CORSOrigins {
		origin, err := ParseOrigin(s)
		if err != nil {
			panic(fmt.Sprintf("web: server.corsOrigins: %v", err))
		}
		o.listed[origin] = true
	}
	if u, err := url.Parse(cfg.PublicURL); err == nil && cfg.PublicURL != "" {
		o.self, _ = ParseOrigin(u.Scheme + "://" + u.Host)
	}
	return o
}

// allows reports whether a page of origin, as a browser sent it, may call the API.
func (o origins) allows(origin string) bool {
	norm, err := ParseOrigin(origin)
	return err == nil && o.listed[norm]
}

// cors answers preflights and marks the answers a listed origin may read. A preflight (OPTIONS
// with Origin and Access-Control-Request-Method) of a listed origin on a route is 204 with the
// route's methods and the headers it may send; any other is 403, which grants nothing. With no
// origins listed, answers are left as they are.
func (o origins) cors(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req, hdr := c.Request(), c.Response().Header()
		origin := req.Header.Get(echo.HeaderOrigin)
		if req.Method == http.MethodOptions && origin != "" && req.Header.Get(echo.HeaderAccessControlRequestMethod) != "" {
			methods, _ := c.Get(echo.ContextKeyHeaderAllow).(string)
			if methods == "" {
				return next(c) // no such route: 404 as for any method
			}
			hdr.Add(echo.HeaderVary, echo.HeaderOrigin)
			hdr.Add(echo.HeaderVary, echo.HeaderAccessControlRequestMethod)
			hdr.Add(echo.HeaderVary, echo.HeaderAccessControlRequestHeaders)
			if !o.allows(origin) {
				return fault.Errorf(fault.Forbidden, "origin %s may not call this server from a browser (server.corsOrigins): forbidden", origin)
			}
			headers := corsAllowHeaders
			if c.Path() == mcpPath {
				headers = slices.Concat(headers, corsMCPHeaders)
			}
			hdr.Set(echo.HeaderAccessControlAllowOrigin, origin)
			hdr.Set(echo.HeaderAccessControlAllowMethods, withoutOptions(methods))
			hdr.Set(echo.HeaderAccessControlAllowHeaders, strings.Join(headers, ", "))
			hdr.Set(echo.HeaderAccessControlMaxAge, strconv.Itoa(corsMaxAge))
			return c.NoContent(http.StatusNoContent)
		}
		if len(o.listed) > 0 {
			// Whether the answer grants a page depends on its Origin: caches must tell them apart.
			// Added once the handler has set its own Vary.
			res := c.Response()
			res.Before(func() { res.Header().Add(echo.HeaderVary, echo.HeaderOrigin) })
			if origin != "" && o.allows(origin) {
				hdr.Set(echo.HeaderAccessControlAllowOrigin, origin)
				hdr.Set(echo.HeaderAccessControlExposeHeaders, strings.Join(corsExposeHeaders, ", "))
			}
		}
		return next(c)
	}
}

// withoutOptions removes OPTIONS from a route's Allow list: a preflight grants what a page may
// send, and OPTIONS is the browser's own.
func withoutOptions(allow string) string {
	var out []string
	for m := range strings.SplitSeq(allow, ",") {
		if m = strings.TrimSpace(m); m != "" && m != http.MethodOptions {
			out = append(out, m)
		}
	}
	return strings.Join(out, ", ")
}

// checkOrigin refuses at /mcp a browser request whose Origin is neither listed nor the server's
// own, with 403, as the MCP transport requires against DNS rebinding. A request without Origin
// passes: programs send none.
func (o origins) checkOrigin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		origin := c.Request().Header.Get(echo.HeaderOrigin)
		if origin == "" {
			return next(c)
		}
		if norm, err := ParseOrigin(origin); err != nil || !(o.listed[norm] || norm == o.self) {
			return fault.Errorf(fault.Forbidden, "origin %s may not call %s (server.corsOrigins): forbidden", origin, mcpPath)
		}
		return next(c)
	}
}

// noSniff tells browsers to take every answer as the type it declares, never sniffing JSON
// (or an error body) into something they would run or render.
func noSniff(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Response().Header().Set(echo.HeaderXContentTypeOptions, "nosniff")
		return next(c)
	}
}
