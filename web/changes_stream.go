package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards/search"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/tenants/paging"
	"github.com/agentcards/agentcards/web/api"
)

// eventStream is the media type of Server-Sent Events, which a client asks for in Accept to get
// the change feed as a live stream.
const eventStream = "text/event-stream"

// keepAliveEvery is how often a stream with nothing to say sends a comment, so that proxies and
// clients do not take a quiet stream for a dead connection.
const keepAliveEvery = 15 * time.Second

// streamWriteTimeout bounds each write of a stream: a reader that takes no bytes for this long
// has its connection closed (one that reads, but slowly, is dropped with a resume event first,
// when its queue fills; see search.StreamLimits).
const streamWriteTimeout = 10 * time.Second

// streamRetry is the reconnection delay a stream asks of EventSource clients, in milliseconds.
const streamRetry = 1000

// wantsStream reports whether a request of the change feed asks for the live stream: a GET
// whose Accept names text/event-stream.
func wantsStream(r *http.Request) bool {
	if r.Method != http.MethodGet {
		return false
	}
	for _, part := range strings.Split(r.Header.Get(echo.HeaderAccept), ",") {
		if mt, _, err := mime.ParseMediaType(strings.TrimSpace(part)); err == nil && strings.EqualFold(mt, eventStream) {
			return true
		}
	}
	return false
}

// noStreamTimeout skips the request timeout for the live stream of the change feed, which lasts
// as long as its client stays: every read it makes has its own bound.
func noStreamTimeout(c echo.Context) bool {
	return wantsStream(c.Request()) && strings.HasSuffix(c.Path(), `/cards\:changes`)
}

// streamChanges answers GET cards:changes with Accept: text/event-stream: the changes after
// since (or Last-Event-ID, which an EventSource sends when it reconnects, and which wins), then
// each change as it commits, one event each, its id the cursor after it. Refusals before the
// stream begins are the one error body; after, the stream ends with a final event (resume, or
// error) and the connection is closed.
func (h *handlers) streamChanges(c echo.Context, since string, page paging.Page) error {
	req := c.Request()
	if id := strings.TrimSpace(req.Header.Get("Last-Event-ID")); id != "" {
		since = id
	}
	sub, err := h.Streams.Subscribe(req.Context(), tenantOf(c), since, page)
	if err != nil {
		if fault.KindOf(err) == fault.RateLimited {
			c.Response().Header().Set("Retry-After", "1")
		}
		return err
	}
	defer sub.Close()
	expires := h.tokenExpiry(req)
	res := c.Response()
	res.Header().Set(echo.HeaderContentType, eventStream)
	res.Header().Set(echo.HeaderCacheControl, "no-store")
	// Proxies that buffer answers (nginx) pass this one on as it comes.
	res.Header().Set("X-Accel-Buffering", "no")
	// The connection ends with the stream: its client opens the next one anew, maybe on another
	// replica, and no later request meets the stream's write deadline.
	res.Header().Set(echo.HeaderConnection, "close")
	res.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(res)
	// The server's read timeout bounds reading a request; this one is read, and the stream
	// lasts longer.
	_ = rc.SetReadDeadline(time.Time{})
	w := &sseWriter{rc: rc, res: res}
	sign := h.signChange(tenantOf(c))
	w.printf("retry: %d\n\n", streamRetry)
	w.event(sub.Cursor(), "ready", readyEvent{Cursor: sub.Cursor()})
	if w.flush() != nil {
		return nil
	}
	for {
		within := keepAliveEvery
		if !expires.IsZero() {
			left := time.Until(expires)
			if left <= 0 {
				w.final(&search.Ended{Reason: search.EndTokenExpired, Cursor: sub.Cursor()})
				return nil
			}
			within = min(within, left)
		}
		events, err := sub.Next(req.Context(), within)
		switch ended, isEnd := search.IsEnded(err); {
		case isEnd:
			w.final(ended)
			return nil
		case err != nil && req.Context().Err() != nil:
			return nil // the client has gone
		case err != nil:
			w.failed(h, c, err)
			return nil
		case len(events) == 0:
			w.printf(": keep-alive\n\n")
		}
		for _, e := range events {
			data, sig := e.Encoded(encodeChange, sign)
			if sig == "" {
				w.raw(e.Cursor, "change", data)
				continue
			}
			// The event's signature goes in a field of its own: EventSource ignores a field it
			// does not know (HTML, 9.2.6), and a client that checks reads it.
			w.raw(e.Cursor, "change", data, "signature: "+sig)
		}
		if w.flush() != nil {
			return nil
		}
	}
}

// readyEvent is the data of a stream's first event: the cursor it starts after, also its id.
type readyEvent struct {
	Cursor string `json:"cursor"`
}

// endEvent is the data of a stream's final resume event.
type endEvent struct {
	Reason string `json:"reason"`
	Cursor string `json:"cursor"`
}

// signChange returns how a change event of the tenant's stream is signed: as a page is (see
// signedJSON), over the event's data, or not at all on a server without signing keys ("").
func (h *handlers) signChange(tenant tenants.ID) func([]byte) string {
	return func(data []byte) string {
		if h.ServiceKeys == nil {
			return ""
		}
		protected, sig, err := h.ServiceKeys.SignDetached(pageHeader(tenant), data)
		if err != nil {
			h.log.Error("a change event could not be signed", "tenant", tenant, "err", err)
			return ""
		}
		return protected + ".." + sig
	}
}

// encodeChange is a change's event data: the member of a cards.changes page for it.
func encodeChange(c search.FeedChange) []byte {
	b, err := json.Marshal(api.CardChange{Op: c.Op, AgentID: c.AgentID, Revision: c.Revision, Card: c.Card})
	if err != nil {
		// A card that was stored encodes.
		panic(fmt.Sprintf("web: encode a change of %q: %v", c.AgentID, err))
	}
	return b
}

// tokenExpiry is when the request's bearer token stops being accepted, or zero if unknown: a
// stream ends then, and its client resumes with a new token.
func (h *handlers) tokenExpiry(r *http.Request) time.Time {
	_, raw, ok := strings.Cut(r.Header.Get(echo.HeaderAuthorization), " ")
	if !ok || h.Tokens == nil {
		return time.Time{}
	}
	t, err := h.Tokens.ValidUntil(strings.TrimSpace(raw))
	if err != nil {
		return time.Time{}
	}
	return t
}

// sseWriter writes the events of one stream; after a failed write it writes nothing more.
type sseWriter struct {
	rc  *http.ResponseController
	res *echo.Response
	buf bytes.Buffer
	err error
}

func (w *sseWriter) printf(format string, args ...any) { fmt.Fprintf(&w.buf, format, args...) }

// event writes an event whose data is v in JSON.
func (w *sseWriter) event(id, name string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("web: encode a %s event: %v", name, err))
	}
	w.raw(id, name, b)
}

// raw writes an event whose data is one line of JSON (which holds no newline), with the lines
// of more fields after it.
func (w *sseWriter) raw(id, name string, data []byte, fields ...string) {
	if id != "" {
		w.buf.WriteString("id: " + id + "\n")
	}
	w.buf.WriteString("event: " + name + "\ndata: ")
	w.buf.Write(data)
	w.buf.WriteString("\n")
	for _, f := range fields {
		w.buf.WriteString(f + "\n")
	}
	w.buf.WriteString("\n")
}

// flush sends what was written, within streamWriteTimeout.
func (w *sseWriter) flush() error {
	if w.err != nil {
		return w.err
	}
	_ = w.rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
	if _, err := w.res.Write(w.buf.Bytes()); err != nil {
		w.err = err
		return err
	}
	w.buf.Reset()
	w.err = w.rc.Flush()
	return w.err
}

// final ends the stream with a resume event: why it ended, and the cursor to resume from.
func (w *sseWriter) final(e *search.Ended) {
	w.event(e.Cursor, "resume", endEvent{Reason: string(e.Reason), Cursor: e.Cursor})
	_ = w.flush()
}

// failed ends the stream with an error event whose data is the one error body: the caller is no
// longer admitted (a tenant suspended, a token refused), or a read failed.
func (w *sseWriter) failed(h *handlers, c echo.Context, err error) {
	_, code, msg := classify(err)
	if code == "internal" {
		h.log.Error("change stream failed", "requestId", requestID(c), "err", err)
		code, msg = string(fault.Unavailable), "the change feed could not be read; resume from the last event"
	}
	w.event("", "error", errorBody{Error: errorDetail{Code: code, Message: msg, RequestID: requestID(c)}})
	_ = w.flush()
}
