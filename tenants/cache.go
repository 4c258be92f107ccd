package tenants

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/agentcards/agentcards/authz/fault"
)

// rowCache remembers tenant rows for the request gates (Active, Published), which read the
// tenant on every request. Writes through the Service on this replica forget the row at once;
// another replica's suspension or policy change is seen once the row is older than ttl.
// Missing tenants are not remembered, so ids that do not exist cannot fill it.
type rowCache struct {
	mu   sync.Mutex
	rows map[ID]cachedRow
	// gen moves on every forget. A read that started before a forget is not kept, or it could
	// put back the row the write just replaced.
	gen uint64
}

type cachedRow struct {
	t       Tenant
	expires time.Time
}

// staleLimit is the oldest a row as last read may be to stand in for the tenant's while the
// database does not answer.
const staleLimit = 5 * time.Minute

func (s *Service) lookup(ctx context.Context, id ID) (Tenant, error) {
	if s.CacheTTL <= 0 {
		return s.Store.Get(ctx, id)
	}
	c := &s.cache
	now := time.Now()
	c.mu.Lock()
	last, known := c.rows[id]
	if known && now.Before(last.expires) {
		c.mu.Unlock()
		return last.t, nil
	}
	gen := c.gen
	c.mu.Unlock()
	t, err := s.Store.Get(ctx, id)
	if errors.Is(err, ErrNotFound) {
		c.mu.Lock()
		delete(c.rows, id)
		c.gen++ // a read in flight must not put it back
		c.mu.Unlock()
	}
	if err != nil {
		// A read, while the database does not answer (it failed, and a ping fails too): the row
		// as last read stands in, its status and policy revision with it, if it is recent and
		// still the one remembered (no write here forgot it meanwhile). Never for a write, nor
		// for a caller whose own deadline ran out.
		if known && mayBeStale(ctx) && fault.KindOf(err) == "" && ctx.Err() == nil &&
			time.Since(last.expires) < staleLimit && s.Down != nil && s.Down(ctx) && ctx.Err() == nil {
			c.mu.Lock()
			still := c.gen == gen
			c.mu.Unlock()
			if still {
				MarkStale(ctx)
				return last.t, nil
			}
		}
		return t, err
	}
	c.mu.Lock()
	if c.gen == gen {
		if c.rows == nil {
			c.rows = map[ID]cachedRow{}
		}
		// The row was read after now: it may be used until now+ttl.
		c.rows[id] = cachedRow{t: t, expires: now.Add(s.CacheTTL)}
	}
	c.mu.Unlock()
	return t, nil
}

// Forget drops the remembered row of a tenant whose row or rules were just written.
func (s *Service) Forget(id ID) {
	c := &s.cache
	c.mu.Lock()
	delete(c.rows, id)
	c.gen++
	c.mu.Unlock()
}
