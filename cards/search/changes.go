package search

import (
	"context"
	"fmt"
	"time"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/tenants/paging"
)

// Paging bounds of the change feed (cards.changes).
const (
	DefaultChanges = 100
	MaxChanges     = 1000
)

// The operations of a FeedChange.
const (
	// FeedUpsert: the card was created or changed; the change carries it as it is now.
	FeedUpsert = "upsert"
	// FeedRemove: the card was removed.
	FeedRemove = "remove"
)

// FeedChange is one change of the tenant's cards as the change feed answers it: an upsert with
// the card as it is when the page is read (its revision is the change's or a later one), or a
// removal with the agent and the revision of the card removed.
type FeedChange struct {
	Op       string
	AgentID  string
	Revision int64
	// Card is an upsert's card; nil for a removal.
	Card *cards.Card
	// Seq is the entry's number in the tenant's feed: the same change read again (a later pass
	// may repeat some) has the same one.
	Seq int64
}

// FeedPage is one page of the change feed and the cursor to follow it from.
type FeedPage struct {
	Changes []FeedChange
	// NextCursor resumes the feed after this page.
	NextCursor string
	// More says the page was full: more changes may be read at once. Without it the client has
	// caught up and asks again later.
	More bool
	// Horizon is the number at or below which every entry of the feed had committed when this
	// page's pass began: once a follower has moved past this page, no later page answers an entry
	// numbered at or below it again, while one above it may come again in the next pass.
	Horizon int64
}

// Changes is the feed a client follows: reads of the change feed that card stores append to.
// Alongside the search, so that a client lists the cards and then follows their changes under
// the same read rules.
type Changes struct {
	Store cards.Store
	Feed  Feed
	Gate  Gate
	Authz Authorizer
	// Window is how long a feed entry may stay uncommitted after the time it records (the longest
	// write's transaction, plus a margin for clocks): on Postgres and MySQL an entry takes its
	// sequence number when inserted, not when it commits, so an entry can appear after entries
	// with higher numbers. 0 where entries commit in the order of their numbers (SQLite).
	Window time.Duration
	// Retention is how long the feed keeps entries (search.feedRetention); 0 keeps them for ever.
	// A cursor that may need an entry pruned since is refused as fault.CursorExpired.
	Retention time.Duration
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// feedPos is what a cursor of the feed holds. A read scans the entries after After, in sequence
// order, within a pass. Every entry at or below the horizon of a pass (the highest sequence
// number below which every entry has committed) is visible through the whole pass, so a pass
// sees each of them; entries above it may commit late, after the scan went by, so the next pass
// starts again from the horizon of this one. A client therefore sees some changes twice, and
// tells them by their revision.
type feedPos struct {
	// After is where the scan resumes: entries with higher sequence numbers come next.
	After int64 `json:"a"`
	// Since is when the pass that After belongs to began (Unix seconds): every entry a client
	// still needs was written after Since less two windows, which the retention check compares.
	Since int64 `json:"s"`
	// Horizon is the horizon of the pass in progress and At when it was taken; Horizon is -1
	// when the next read begins a pass.
	Horizon int64 `json:"h"`
	At      int64 `json:"t"`
}

// ListChanges answers a page of the tenant's change feed after since, a cursor of an earlier
// page, with only the changes of cards the caller may read. Without since it answers no change
// and the cursor of the feed's present: a client takes it, lists the cards, and follows the feed
// from it, seeing every change after its list (and some it already has, which their revisions
// tell). A cursor the feed may have pruned entries of is fault.CursorExpired.
func (s *Changes) ListChanges(ctx context.Context, tenant tenants.ID, since string, page paging.Page) (FeedPage, error) {
	ctx, err := s.admit(ctx, tenant)
	if err != nil {
		return FeedPage{}, err
	}
	limit, err := page.Check(DefaultChanges, MaxChanges)
	if err != nil {
		return FeedPage{}, err
	}
	var readable func(string) bool
	if since != "" {
		if readable, err = s.Authz.ReadFilter(ctx, string(tenant)); err != nil {
			return FeedPage{}, err
		}
	}
	return s.read(ctx, tenant, since, limit, readable)
}

// Follow answers a page of at most limit entries of the tenant's change feed after since, as
// ListChanges does, with every change (no caller, no read filter, no gate): the service's own
// followers (webhook deliveries) read the feed through it, so that they share its order and
// its gap-freedom. The caller has checked the tenant, and limit (1 or more).
func (s *Changes) Follow(ctx context.Context, tenant tenants.ID, since string, limit int) (FeedPage, error) {
	return s.read(ctx, tenant, since, limit, nil)
}

// read is a page of the feed after since with the changes readable allows (all when nil).
func (s *Changes) read(ctx context.Context, tenant tenants.ID, since string, limit int, readable func(string) bool) (FeedPage, error) {
	list := feedList(tenant)
	now := s.now()
	if since == "" {
		h, err := s.horizon(ctx, tenant, now, 0)
		if err != nil {
			return FeedPage{}, err
		}
		pos := feedPos{After: h, Since: now.Unix(), Horizon: -1}
		return FeedPage{Changes: []FeedChange{}, NextCursor: paging.EncodeCursor(list, pos), Horizon: h}, nil
	}
	pos, err := s.decode(tenant, since, now)
	if err != nil {
		return FeedPage{}, err
	}
	r, err := s.scan(ctx, tenant, pos, now, limit)
	if err != nil {
		return FeedPage{}, err
	}
	out, err := s.render(ctx, tenant, r.entries, readable)
	if err != nil {
		return FeedPage{}, err
	}
	return FeedPage{Changes: out, NextCursor: paging.EncodeCursor(list, r.next), More: r.full, Horizon: r.pos.Horizon}, nil
}

// scanned is one read of the feed within a pass (see feedPos).
type scanned struct {
	entries []Change
	// pos is the position the read was made from, with its pass's horizon: the cursor after an
	// entry e of the read is pos with After e.Seq.
	pos feedPos
	// next is where the following read starts: after the last entry of a full read, else the
	// next pass, from this one's horizon.
	next feedPos
	// full says the read returned limit entries: more may follow at once.
	full bool
	// began says the read began a pass (took its horizon at now).
	began bool
}

// scan reads the tenant's entries after pos, at most limit, beginning a pass at now when pos
// asks for one (Horizon -1).
func (s *Changes) scan(ctx context.Context, tenant tenants.ID, pos feedPos, now time.Time, limit int) (scanned, error) {
	r := scanned{pos: pos}
	if pos.Horizon < 0 {
		h, err := s.horizon(ctx, tenant, now, pos.After)
		if err != nil {
			return scanned{}, err
		}
		r.pos.Horizon, r.pos.At, r.began = h, now.Unix(), true
	}
	entries, err := s.Feed.Changes(ctx, tenant, r.pos.After, limit)
	if err != nil {
		return scanned{}, err
	}
	r.entries, r.full = entries, len(entries) == limit
	if r.full {
		r.next = r.pos
		r.next.After = entries[len(entries)-1].Seq
	} else {
		// Caught up: the next pass starts from this one's horizon.
		r.next = feedPos{After: r.pos.Horizon, Since: r.pos.At, Horizon: -1}
	}
	return r, nil
}

// feedList is the list a cursor of the tenant's change feed belongs to.
func feedList(tenant tenants.ID) string { return "changes/" + string(tenant) }

// decode reads a cursor of the tenant's feed, refusing one that may need entries pruned since.
func (s *Changes) decode(tenant tenants.ID, since string, now time.Time) (feedPos, error) {
	var pos feedPos
	if err := paging.DecodeCursor(feedList(tenant), since, &pos); err != nil {
		return feedPos{}, err
	}
	if s.Retention > 0 && now.Sub(time.Unix(pos.Since, 0)) > s.Retention-2*s.Window {
		return feedPos{}, fault.New(fault.CursorExpired, "since: the change feed no longer holds this cursor's changes: list the cards again and follow from a new cursor")
	}
	return pos, nil
}

// admit lets an authenticated caller into the tenant through the gate.
func (s *Changes) admit(ctx context.Context, tenant tenants.ID) (context.Context, error) {
	return (&Service{Gate: s.Gate}).admit(ctx, tenant)
}

func (s *Changes) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// horizon returns the tenant's highest sequence number at or below which every entry has
// committed by now, and at least floor (entries a pass has already covered). Where entries
// commit in order it is the newest entry's. Elsewhere an entry that has not committed was
// numbered less than a window ago, and so was numbered after every entry written two windows
// ago (whose numbers were taken within a window of the time they record).
func (s *Changes) horizon(ctx context.Context, tenant tenants.ID, now time.Time, floor int64) (int64, error) {
	var h int64
	var err error
	if s.Window <= 0 {
		h, err = s.Feed.LastSeq(ctx, tenant)
	} else {
		h, err = s.Feed.SeqBefore(ctx, tenant, now.Add(-2*s.Window))
	}
	if err != nil {
		return 0, err
	}
	return max(h, floor), nil
}

// render turns feed entries into the changes the caller may see: of readable cards only, an
// upsert with the card as it is now. An upsert of a card removed since is left out (the removal
// follows it in the feed); so is a tenant's purge (the tenant is gone: its feed answers 404).
func (s *Changes) render(ctx context.Context, tenant tenants.ID, entries []Change, readable func(string) bool) ([]FeedChange, error) {
	out := make([]FeedChange, 0, len(entries))
	var ids []string
	seen := map[string]bool{}
	for _, e := range entries {
		if e.Op == OpPurge || e.AgentID == "" || (readable != nil && !readable(e.AgentID)) {
			continue
		}
		if e.Op != OpDelete && !seen[e.AgentID] {
			seen[e.AgentID] = true
			ids = append(ids, e.AgentID)
		}
	}
	current := map[string]*cards.Card{}
	if len(ids) > 0 {
		got, err := s.Store.GetMany(ctx, tenant, ids)
		if err != nil {
			return nil, fmt.Errorf("read changed cards: %w", err)
		}
		for i := range got {
			current[got[i].AgentID] = &got[i]
		}
	}
	for _, e := range entries {
		if e.Op == OpPurge || e.AgentID == "" || (readable != nil && !readable(e.AgentID)) {
			continue
		}
		if e.Op == OpDelete {
			out = append(out, FeedChange{Op: FeedRemove, AgentID: e.AgentID, Revision: e.Revision, Seq: e.Seq})
			continue
		}
		c, ok := current[e.AgentID]
		if !ok {
			continue
		}
		out = append(out, FeedChange{Op: FeedUpsert, AgentID: e.AgentID, Revision: c.Revision, Card: c, Seq: e.Seq})
	}
	return out, nil
}
