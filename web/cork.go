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

// corkAbove is the body size from which writeLarge holds the segments back: net/http writes
// the header and the first 4 KiB of the body in one write and the rest in another.
const corkAbove = 2 << 10

// writeLarge writes a JSON body that may be larger than net/http's 4 KiB connection buffer.
// net/http would send such a body as two or more TCP segments, each waking the client on its
// own; with TCP_CORK set around the writes (Linux), the kernel sends the response as full
// segments when the cork comes out, which on loopback means one.
func writeLarge(c echo.Context, status int, body []byte) error {
	c.Response().Header().Set(echo.HeaderContentLength, strconv.Itoa(len(body)))
	conn, _ := c.Request().Context().Value(connKey{}).(net.Conn)
	if len(body) < corkAbove || conn == nil || !cork(conn, true) {
		return c.JSONBlob(status, body)
	}
	err := c.JSONBlob(status, body)
	if err == nil {
		err = http.NewResponseController(c.Response()).Flush()
	}
	cork(conn, false)
	return err
}
