package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"math/rand/v2"
	"net/http"
	"reflect"
	"strings"
	"time"

	"github.com/agentcards/agentcards/web/api"
	"github.com/agentcards/agentcards/web/catalog"
)

// Change is one change of a live stream of the change feed (Cards.Watch), with the cursor after
// it: Watch, or cards.changes, given it as since resumes after this change.
type Change struct {
	api.CardChange
	Cursor string
	// Signature is the service's signature of the event's data (the change's JSON, Data), as a
	// page's Agentcards-Signature is of the page: token.VerifyDetached(jwks, Signature, Data)
	// checks it. Empty when the server signs nothing.
	Signature string
	Data      []byte
}

// watchAttempts is the least number of attempts in a row Watch makes to open a stream before it
// gives up (WithRetry raises it): a stream that was open and ended is always opened again.
const watchAttempts = 5

// maxWatchEvent bounds one event of a stream (a change carries a whole card).
const maxWatchEvent = 16 << 20

// Watch follows the tenant's change feed live (cards.changes as Server-Sent Events): the changes
// after in.Since (none: from now on), in commit order, each with its cursor, as they commit. It
// opens the stream again by itself, resuming with Last-Event-ID after the last change it
// yielded, whenever the stream ends (the server drains, drops a slow reader, or the connection
// breaks), after a growing, jittered pause (or the Retry-After of a 429 or 503). It yields an
// error and stops on a refusal that trying again cannot mend (a token refused, a cursor
// expired), or after max(watchAttempts, WithRetry's) attempts in a row that opened nothing. A
// client's changes may repeat one it has seen (after a reconnection, on Postgres and MySQL): its
// revision tells. The HTTP client must have no overall Timeout.
func (r Cards) Watch(ctx context.Context, in api.CardsChanges) iter.Seq2[Change, error] {
	return func(yield func(Change, error) bool) {
		c := r.c
		req, ok := catalog.Lookup("cards.changes")
		if !ok {
			yield(Change{}, errors.New("client: no cards.changes in the catalogue"))
			return
		}
		if err := check(req, reflect.ValueOf(in)); err != nil {
			yield(Change{}, err)
			return
		}
		e, err := c.encode(req, reflect.ValueOf(in))
		if err != nil {
			yield(Change{}, err)
			return
		}
		w := &watch{c: c, name: req.Name, target: e.target, cursor: in.Since}
		w.ready, _ = ctx.Value(readyKey{}).(func(string) error)
		failures := 0
		for ctx.Err() == nil {
			began := time.Now()
			opened, after, err := w.once(ctx, yield)
			switch {
			case errors.Is(err, errStopped):
				return
			case opened && err == nil && w.changes == 0 && time.Since(began) < time.Second && after <= 0:
				// A stream that ended at once, saying nothing: opened again after a pause, so
				// that a server that does so each time is not asked without end.
				failures = 0
				after = time.Duration(float64(time.Second) * (0.5 + rand.Float64()))
			case opened:
				failures = 0
			default:
				failures++
			}
			var fatal *Error
			if err != nil && (errors.As(err, &fatal) && !retryable(fatal) || failures >= max(watchAttempts, c.retries+1)) {
				if ctx.Err() == nil {
					yield(Change{}, err)
				}
				return
			}
			wait := after
			if wait <= 0 && failures > 0 {
				wait = time.Duration(float64(100*time.Millisecond<<min(failures-1, 8)) * (0.5 + rand.Float64()))
			}
			t := time.NewTimer(min(wait, 30*time.Second))
			select {
			case <-ctx.Done():
				t.Stop()
			case <-t.C:
			}
		}
	}
}

// errStopped is the loop over a Watch breaking out.
var errStopped = errors.New("client: the watch's loop stopped")

// retryable reports whether a refusal may pass if the request is sent again.
func retryable(e *Error) bool {
	switch e.Status {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return e.Code == "unavailable" || e.Code == "timeout"
}

// watch is one Watch's state across its streams.
type watch struct {
	c      *Client
	name   string
	target string
	// cursor is the id of the last event received: the next stream resumes after it.
	cursor string
	// ready, when set, is called with the cursor of each stream's ready event (OnReady);
	// changes counts the changes of the last stream.
	ready   func(string) error
	changes int
}

type readyKey struct{}

// OnReady returns a context whose Watch calls ready with the cursor each stream starts after, as
// it opens; an error of ready ends the Watch with it.
func OnReady(ctx context.Context, ready func(cursor string) error) context.Context {
	return context.WithValue(ctx, readyKey{}, ready)
}

// once opens one stream and yields its changes until it ends. opened says the server took the
// request; after is the pause the server asked for before the next attempt.
func (w *watch) once(ctx context.Context, yield func(Change, error) bool) (opened bool, after time.Duration, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w.changes = 0
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.target, nil)
	if err != nil {
		return false, 0, err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("User-Agent", w.c.agent)
	if w.c.token != "" {
		req.Header.Set("Authorization", "Bearer "+w.c.token)
	}
	if w.cursor != "" {
		req.Header.Set("Last-Event-ID", w.cursor)
	}
	resp, err := w.c.http.Do(req)
	if err != nil {
		return false, 0, fmt.Errorf("%s: %w", w.name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		e := answerError(w.name, resp, data)
		return false, e.RetryAfter, e
	}
	if mt, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";"); strings.TrimSpace(mt) != "text/event-stream" {
		return false, 0, &Error{Request: w.name, Status: resp.StatusCode, Code: "unexpected_response",
			Message: "the answer is not a stream of events (Content-Type " + resp.Header.Get("Content-Type") + ")"}
	}
	events := readEvents(bufio.NewReaderSize(resp.Body, 64<<10))
	for ev, err := range events {
		if err != nil {
			return true, 0, fmt.Errorf("%s: the stream broke: %w", w.name, err)
		}
		switch ev.name {
		case "ready", "resume":
			if ev.id != "" {
				w.cursor = ev.id
			}
			if ev.name == "ready" && w.ready != nil {
				if err := w.ready(w.cursor); err != nil {
					yield(Change{}, err)
					return true, 0, errStopped
				}
			}
		case "change":
			var ch api.CardChange
			if err := json.Unmarshal(ev.data, &ch); err != nil {
				return true, 0, &Error{Request: w.name, Status: resp.StatusCode, Code: "unexpected_response",
					Message: "a change event is not the JSON expected: " + err.Error()}
			}
			w.cursor = ev.id
			w.changes++
			if !yield(Change{CardChange: ch, Cursor: ev.id, Signature: ev.signature, Data: ev.data}, nil) {
				return true, 0, errStopped
			}
		case "error":
			return true, 0, answerError(w.name, resp, ev.data)
		}
	}
	return true, 0, nil
}

// sseEvent is one Server-Sent Event: its id, its name, its data (lines joined by "\n") and its
// signature (a field of agentcards' change events).
type sseEvent struct {
	id, name, signature string
	data                []byte
}

// readEvents reads Server-Sent Events until the stream ends (no error) or breaks.
func readEvents(r *bufio.Reader) iter.Seq2[sseEvent, error] {
	return func(yield func(sseEvent, error) bool) {
		var ev sseEvent
		size := 0
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				if !errors.Is(err, io.EOF) {
					yield(sseEvent{}, err)
				}
				return
			}
			if size += len(line); size > maxWatchEvent {
				yield(sseEvent{}, fmt.Errorf("an event of over %d bytes", maxWatchEvent))
				return
			}
			line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
			if line == "" {
				if ev.name != "" || ev.data != nil {
					if ev.name == "" {
						ev.name = "message"
					}
					if !yield(ev, nil) {
						return
					}
				}
				ev, size = sseEvent{}, 0
				continue
			}
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "id":
				ev.id = value
			case "event":
				ev.name = value
			case "signature":
				ev.signature = value
			case "data":
				if ev.data != nil {
					ev.data = append(ev.data, '\n')
				}
				ev.data = append(ev.data, value...)
			}
		}
	}
}
