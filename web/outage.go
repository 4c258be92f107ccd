package web

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// outageLog says a database outage once, then at intervals with the count of requests it failed
// meanwhile, and says when the database answers again: not one error line per failed request
// (hundreds a second under load) and two per readiness probe.
type outageLog struct {
	log    *slog.Logger
	active atomic.Bool // for the cheap check of requests that succeed

	mu     sync.Mutex
	since  time.Time // when the outage was first seen
	said   time.Time // when it was last said
	failed int       // requests failed since it was last said
	total  int       // requests failed in the whole outage
}

// outageRepeat is how often an outage is said again while it lasts.
const outageRepeat = 30 * time.Second

// fail counts a request that failed because the database does not answer.
func (o *outageLog) fail(err error, requestID, method, path string) {
	now := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	o.failed++
	o.total++
	if !o.active.Load() {
		o.active.Store(true)
		o.since, o.said, o.failed = now, now, 0
		o.log.Error("the database does not answer: requests that need it fail with 503 until it does",
			"requestId", requestID, "method", method, "path", path, "err", err)
		return
	}
	if now.Sub(o.said) >= outageRepeat {
		o.log.Error("the database still does not answer", "failedRequests", o.failed,
			"for", now.Sub(o.since).Round(time.Second), "err", err)
		o.said, o.failed = now, 0
	}
}

// ok notes that the database answered: the end of an outage, if one was going on.
func (o *outageLog) ok() {
	if !o.active.Load() {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.active.Load() {
		return
	}
	o.active.Store(false)
	o.log.Info("the database answers again", "after", time.Since(o.since).Round(time.Millisecond), "failedRequests", o.total)
	o.total, o.failed = 0, 0
}
