package tenants

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/agentcards/agentcards/authz/fault"
)

// A read may be answered from memory while the database does not answer: the tenant row as
// last read, the search index, the cards it has encoded. The door lets a read be (writes never
// are) with WithStaleMark, and marks its answer stale; the services say so with MarkStale on the
// context the door gave them.

type staleKey struct{}

// staleMark is what WithStaleMark puts in a read's context: whether its answer came from memory,
// and the gate that admitted it, which FoundDown asks.
type staleMark struct {
	stale atomic.Bool
	gate  atomic.Pointer[Service]
}

// WithStaleMark returns a context for a read, which may be answered from memory while the
// database does not answer, and the function that reports whether it was.
func WithStaleMark(ctx context.Context) (context.Context, func() bool) {
	m := &staleMark{}
	return context.WithValue(ctx, staleKey{}, m), m.stale.Load
}

// MarkStale says that the answer of ctx's request is made of what memory held while the
// database did not answer. Without WithStaleMark (a write) it does nothing.
func MarkStale(ctx context.Context) {
	if m, ok := ctx.Value(staleKey{}).(*staleMark); ok {
		m.stale.Store(true)
	}
}

// Stale reports whether ctx's request was marked stale: an earlier step found the database not
// answering, so a later one may go to memory first.
func Stale(ctx context.Context) bool {
	m, ok := ctx.Value(staleKey{}).(*staleMark)
	return ok && m.stale.Load()
}

// mayBeStale reports whether ctx's request may be answered from memory: a read the door marked.
func mayBeStale(ctx context.Context) bool {
	_, ok := ctx.Value(staleKey{}).(*staleMark)
	return ok
}

// admitted notes, on a read that may be answered from memory, the gate that let it in.
func (s *Service) admitted(ctx context.Context) {
	if m, ok := ctx.Value(staleKey{}).(*staleMark); ok && s.Ping != nil {
		m.gate.Store(s)
	}
}

// FoundDown is told that a read of the database for ctx's request failed with err, after the
// gate let it in on the database answering: it reports whether the database does not answer
// (the gate found it down, or its ping finds it down now), and then marks the request stale,
// so that the read is answered from memory, as the next ones will be. Only a read that may be
// answered from memory (WithStaleMark) asks; an error the service knows (a fault), a missing
// row and a request that ended say nothing of the database.
func FoundDown(ctx context.Context, err error) bool {
	m, ok := ctx.Value(staleKey{}).(*staleMark)
	if !ok || err == nil || ctx.Err() != nil || fault.KindOf(err) != "" || errors.Is(err, ErrNotFound) {
		return false
	}
	s := m.gate.Load()
	if s == nil || !s.confirmDown(ctx) {
		return false
	}
	m.stale.Store(true)
	return true
}
