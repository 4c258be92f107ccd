package tenants

import (
	"context"
	"sync/atomic"
)

// A read may be answered from memory while the database does not answer: the tenant row as
// last read, the search index, the cards it has encoded. The door lets a read be (writes never
// are) with WithStaleMark, and marks its answer stale; the services say so with MarkStale on the
// context the door gave them.

type staleKey struct{}

// WithStaleMark returns a context for a read, which may be answered from memory while the
// database does not answer, and the function that reports whether it was.
func WithStaleMark(ctx context.Context) (context.Context, func() bool) {
	var mark atomic.Bool
	return context.WithValue(ctx, staleKey{}, &mark), mark.Load
}

// MarkStale says that the answer of ctx's request is made of what memory held while the
// database did not answer. Without WithStaleMark (a write) it does nothing.
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

// mayBeStale reports whether ctx's request may be answered from memory: a read the door marked.
func mayBeStale(ctx context.Context) bool {
	_, ok := ctx.Value(staleKey{}).(*atomic.Bool)
	return ok
}
