package tenants

import (
	"context"
	"sync/atomic"
)

// A request may be answered from memory while the database does not answer: the tenant row as
// last read, the search index, the cards it has encoded. The door marks such an answer stale;
// the services say so with MarkStale on the context the door gave them.

type staleKey struct{}

// WithStaleMark returns a context whose requests can be marked stale, and the function that
// reports whether one was.
func WithStaleMark(ctx context.Context) (context.Context, func() bool) {
	var mark atomic.Bool
	return context.WithValue(ctx, staleKey{}, &mark), mark.Load
}

// MarkStale says that the answer of ctx's request is made of what memory held while the
// database did not answer. Without WithStaleMark it does nothing.
func MarkStale(ctx context.Context) {
	if mark, ok := ctx.Value(staleKey{}).(*atomic.Bool); ok {
		mark.Store(true)
	}
}

// Stale reports whether ctx's request was marked stale: an earlier step found the database not
// answering, so a later one may go to memory first.
func Stale(ctx context.Context) bool {
	mark, ok := ctx.Value(staleKey{}).(*atomic.Bool)
	return ok && mark.Load()
}
