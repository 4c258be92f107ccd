package search

import (
	"context"
	"time"

	"github.com/agentcards/agentcards/tenants"
)

// Change is one entry of the change feed that stores append in the transaction of every card
// write. OpPurge (with no agent) says the whole tenant is gone.
type Change struct {
	Seq     int64
	AgentID string
	Op      string
	// Revision is the card's revision after the write (for a delete, that of the card removed).
	Revision int64
}

// OpPurge is the change-feed operation recorded when a tenant is deleted; OpDelete when a card
// is.
const (
	OpPurge  = "purge"
	OpDelete = "delete"
)

// Feed reads the change feed.
type Feed interface {
	// Changes returns the tenant's entries with seq > after in seq order, at most limit.
	Changes(ctx context.Context, tenant tenants.ID, after int64, limit int) ([]Change, error)
	// LastSeq returns the highest seq of the tenant's entries, 0 when there is none.
	LastSeq(ctx context.Context, tenant tenants.ID) (int64, error)
	// SeqBefore returns the highest seq of the tenant's entries written before t, 0 when none.
	SeqBefore(ctx context.Context, tenant tenants.ID, t time.Time) (int64, error)
	// HighestSeq returns the highest seq of every tenant's entries, 0 when there is none.
	HighestSeq(ctx context.Context) (int64, error)
}
