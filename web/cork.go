package web

import (
	"context"
	"net"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"
)

type connKey struct{}

// ConnContext is the http.Server hook that lets handlers reach the connection a request came
// on, which writeLarge needs. Servers built without it still work, only without the corking.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// InProcess returns ctx for a request served in process on behalf of another (an MCP tool call
// of an /mcp request): its answer goes to no connection, so none is corked.
func InProcess(ctx context.Context) context.Context { return context.WithValue(ctx, connKey{}, nil) }

// corkAbove is the body size from which writeLarge holds the segments back. net/http gathers
// the header and the body in a 4 KiB connection buffer: a body that fits beside the header
// leaves in one write anyway, a larger one in two (the full buffer, then the rest).
const corkAbove = 4<<10 - 512

// writeLarge writes a JSON body that may be larger than net/http's connection buffer. net/http
// would send such a body as two TCP segments, each waking the client on its own; with TCP_CORK
// set around the writes (Linux), the kernel sends the response as full segments when the cork
// comes out, which on loopback means one.
func writeLarge(c echo.Context, status int, body []byte) error {
	return writeLargeAs(c, status, echo.MIMEApplicationJSON, body)
}

// writeLargeAs is writeLarge for a body of the media type contentType.
func writeLargeAs(c echo.Context, status int, contentType string, body []byte) error {
	c.Response().Header().Set(echo.HeaderContentLength, strconv.Itoa(len(body)))
	conn, _ := c.Request().Context().Value(connKey{}).(net.Conn)
	// A HEAD answer is the header alone: nothing to hold back.
	if len(body) < corkAbove || conn == nil || c.Request().Method == http.MethodHead || !cork(conn, true) {
		return c.Blob(status, contentType, body)
	}
	// Out again whatever happens, or every later response on the connection would wait for
	// the kernel's 200 ms timer.
	defer cork(conn, false)
	if err := c.Blob(status, contentType, body); err != nil {
		return err
	}
	// Push the body out of net/http's buffers before the cork comes out.
	return http.NewResponseController(c.Response().Writer).Flush()
}
