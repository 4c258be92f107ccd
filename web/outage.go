package web

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// outageLog says a database outage once, then at intervals with the count of requests it failed
// and of reads it answered from memory (marked stale) meanwhile, and says when the database
// answers again: not one error line per failed request (hundreds a second under load) and two
// per readiness probe, nor silence while only reads arrive and memory answers them.
//
// With a tenant gate that pings the database (gated), the outage is the gate's: it starts when
// the gate finds the database down and ends when a ping of the gate's answers (begin and ok,
// from the gate's hooks), and requests only count. Without one (SQLite), the first request
// failed for it starts it and the first write or readiness probe that succeeds ends it.
type outageLog struct {
	log    *slog.Logger
	gated  bool
	active atomic.Bool // for the cheap check of requests that succeed

	mu         sync.Mutex
	since      time.Time // when the outage was first seen
	said       time.Time // when it was last said
	failed     int       // requests failed since it was last said
	stale      int       // reads answered from memory since it was last said
	total      int       // requests failed in the whole outage
	staleTotal int       // reads answered from memory in the whole outage
}

// outageRepeat is how often an outage is said again while it lasts.
const outageRepeat = 30 * time.Second

// fail counts a request that failed because the database does not answer.
func (o *outageLog) fail(err error, requestID, method, path string) {
	o.note(false, err, requestID, method, path)
}

// answeredStale counts a read answered from memory because the database does not answer.
func (o *outageLog) answeredStale(requestID, method, path string) {
	o.note(true, nil, requestID, method, path)
}

// begin says the outage the gate found, once.
func (o *outageLog) begin(err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.active.Load() {
		return
	}
	o.start(time.Now(), err)
}

// start says a new outage; o.mu is held.
func (o *outageLog) start(now time.Time, err error, attrs ...any) {
	o.active.Store(true)
	o.since, o.said = now, now
	o.failed, o.stale, o.total, o.staleTotal = 0, 0, 0, 0
	if err != nil {
		attrs = append(attrs, "err", err)
	}
	o.log.Error("the database does not answer: reads that memory holds are answered from it (marked stale), "+
		"other requests fail with 503 until it does", attrs...)
}

// wrote notes that a write or a readiness probe went through: without a gate, the end of an
// outage, if one was going on (with one, only the gate's ping ends it).
func (o *outageLog) wrote() {
	if !o.gated {
		o.ok()
	}
}

func (o *outageLog) note(stale bool, err error, requestID, method, path string) {
	now := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.active.Load() {
		if o.gated {
			return // the gate found it answering since: not a new outage
		}
		o.start(now, err, "requestId", requestID, "method", method, "path", path)
		if stale {
			o.stale, o.staleTotal = 1, 1
		} else {
			o.failed, o.total = 1, 1
		}
		return
	}
	if stale {
		o.stale++
		o.staleTotal++
	} else {
		o.failed++
		o.total++
	}
	if now.Sub(o.said) >= outageRepeat {
		attrs := []any{"failedRequests", o.failed, "staleAnswers", o.stale, "for", now.Sub(o.since).Round(time.Second)}
		if err != nil {
			attrs = append(attrs, "err", err)
		}
		o.log.Error("the database still does not answer", attrs...)
		o.said, o.failed, o.stale = now, 0, 0
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
	o.log.Info("the database answers again", "after", time.Since(o.since).Round(time.Millisecond),
		"failedRequests", o.total, "staleAnswers", o.staleTotal)
	o.total, o.failed, o.stale, o.staleTotal = 0, 0, 0, 0
}
