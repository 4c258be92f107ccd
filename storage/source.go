package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/follow"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/tenants/audit"
)

// SourceStore keeps the sources the tenants follow and the state of their syncs (migration 24).
// As WebhookStore does, each write of sync state reads the source's row under its lock first,
// and goes on only while the writer holds the sync lease: a replica whose lease lapsed cannot
// move the cursor that another replica now advances.
type SourceStore struct{ db *DB }

// NewSourceStore returns the store of followed sources over db.
func NewSourceStore(db *DB) *SourceStore { return &SourceStore{db: db} }

var _ follow.Store = (*SourceStore)(nil)

// maxSourceError bounds a source's last error, in bytes (its column's bound).
const maxSourceError = 300

type sourceRow struct {
	TenantID        string       `gorm:"column:tenant_id"`
	SourceID        string       `gorm:"column:source_id"`
	Kind            string       `gorm:"column:kind"`
	URL             string       `gorm:"column:url"`
	URLs            string       `gorm:"column:urls"`
	IntervalSeconds int          `gorm:"column:interval_seconds"`
	TokenSealed     string       `gorm:"column:token_sealed"`
	FeedCursor      string       `gorm:"column:feed_cursor"`
	State           string       `gorm:"column:state"`
	Cards           int          `gorm:"column:cards"`
	Conflicts       string       `gorm:"column:conflicts"`
	Failures        int          `gorm:"column:failures"`
	LastError       string       `gorm:"column:last_error"`
	LastSyncAt      sql.NullTime `gorm:"column:last_sync_at"`
	ListedAt        sql.NullTime `gorm:"column:listed_at"`
	NextSyncAt      time.Time    `gorm:"column:next_sync_at"`
	LeaseOwner      string       `gorm:"column:lease_owner"`
	LeaseUntil      sql.NullTime `gorm:"column:lease_until"`
	CreatedAt       time.Time    `gorm:"column:created_at"`
	UpdatedAt       time.Time    `gorm:"column:updated_at"`
}

func (sourceRow) TableName() string { return "sources" }

// source converts a row to the domain's source: times in UTC, no URLs nor conflicts as nil.
func (r sourceRow) source() (follow.Source, error) {
	s := follow.Source{ID: r.SourceID, Kind: r.Kind, URL: r.URL, Token: r.TokenSealed != "", Interval: r.IntervalSeconds,
		State: r.State, Cards: r.Cards, Failures: r.Failures, LastError: r.LastError, NextSyncAt: r.NextSyncAt.UTC(),
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
	var err error
	if s.URLs, err = readList(r.URLs); err != nil {
		return s, fmt.Errorf("source %s: urls: %w", r.SourceID, err)
	}
	if s.Conflicts, err = readList(r.Conflicts); err != nil {
		return s, fmt.Errorf("source %s: conflicts: %w", r.SourceID, err)
	}
	if r.LastSyncAt.Valid {
		t := r.LastSyncAt.Time.UTC()
		s.LastSyncAt = &t
	}
	return s, nil
}

// readList reads a JSON array column; an empty one is nil.
func readList(col string) ([]string, error) {
	if col == "" || col == "[]" {
		return nil, nil
	}
	var l []string
	if err := json.Unmarshal([]byte(col), &l); err != nil {
		return nil, err
	}
	if len(l) == 0 {
		return nil, nil
	}
	return l, nil
}

// heldBy reports whether owner holds the row's lease.
func (r *sourceRow) heldBy(owner string) bool { return r.LeaseOwner == owner && r.LeaseUntil.Valid }

// where describes the source in an audit entry or a message: its kind and its URL, or how many
// URLs it lists.
func (r *sourceRow) where() string {
	if r.Kind != follow.KindA2AURLs {
		return r.Kind + " " + r.URL
	}
	urls, _ := readList(r.URLs) // written by Create, always an array
	if len(urls) == 1 {
		return r.Kind + " 1 url"
	}
	return fmt.Sprintf("%s %d urls", r.Kind, len(urls))
}

// sameWhere reports whether two sources read the same place: the same kind and URL, or for
// a2a-urls the same set of URLs.
func (r *sourceRow) sameWhere(o *sourceRow) bool {
	if r.Kind != o.Kind {
		return false
	}
	if r.Kind != follow.KindA2AURLs {
		return r.URL == o.URL
	}
	a, _ := readList(r.URLs)
	b, _ := readList(o.URLs)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func sourceNotFound(id string) error {
	return fault.Errorf(fault.NotFound, "source %q: not found", id)
}

// Create stores s with its sealed token (empty: none) and its audit entry, unless the tenant has
// max sources already or one of the same kind and URL (for a2a-urls, the same URLs in any order)
// (conflict), or does not exist (not found). The tenant row is locked meanwhile, so that
// concurrent creates count each other: on Postgres NO KEY UPDATE, as WebhookStore.Create takes
// it. The source is stored as s gives it (a state of "" is syncing), with no cursor and no lease;
// s.Token is not read.
func (s *SourceStore) Create(ctx context.Context, tenant tenants.ID, src follow.Source, sealedToken string, max int) (follow.Source, error) {
	entry := audit.New(ctx, "sources.create", audit.SourceObject(src.ID), 0, 0)
	state := src.State
	if state == "" {
		state = follow.StateSyncing
	}
	row := sourceRow{TenantID: string(tenant), SourceID: src.ID, Kind: src.Kind, URL: src.URL, URLs: jsonList(src.URLs),
		IntervalSeconds: src.Interval, TokenSealed: sealedToken, State: state, Cards: src.Cards, Conflicts: jsonList(src.Conflicts),
		Failures: src.Failures, LastError: src.LastError, NextSyncAt: utc(src.NextSyncAt), CreatedAt: utc(src.CreatedAt), UpdatedAt: utc(src.UpdatedAt)}
	if src.LastSyncAt != nil {
		row.LastSyncAt = sql.NullTime{Time: utc(*src.LastSyncAt), Valid: true}
	}
	entry.Detail = "created: " + row.where()
	err := s.db.transact(ctx, func(tx *gorm.DB) error {
		if err := s.db.lockTenant(tx, tenant); err != nil {
			return err
		}
		var others []sourceRow
		if err := tx.Select("source_id", "kind", "url", "urls").Where("tenant_id = ?", string(tenant)).Order("created_at, source_id").Find(&others).Error; err != nil {
			return err
		}
		for i := range others {
			if others[i].sameWhere(&row) {
				return fault.Errorf(fault.Conflict, "the tenant follows %s already as source %s", row.where(), others[i].SourceID)
			}
		}
		if len(others) >= max {
			return fault.Errorf(fault.Conflict, "the tenant has %d sources, the most it may have; remove one first", len(others))
		}
		if err := tx.Create(&row).Error; err != nil {
			return err
		}
		return s.db.record(tx, string(tenant), entry)
	})
	if err != nil {
		return follow.Source{}, err
	}
	return row.source()
}

// List answers the tenant's sources, oldest first.
func (s *SourceStore) List(ctx context.Context, tenant tenants.ID) ([]follow.Source, error) {
	var rows []sourceRow
	if err := s.db.with(ctx).Where("tenant_id = ?", string(tenant)).Order("created_at, source_id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list sources: %w", err)
	}
	out := make([]follow.Source, 0, len(rows))
	for _, r := range rows {
		src, err := r.source()
		if err != nil {
			return nil, err
		}
		out = append(out, src)
	}
	return out, nil
}

// Get answers one source.
func (s *SourceStore) Get(ctx context.Context, tenant tenants.ID, id string) (follow.Source, error) {
	var row sourceRow
	err := s.db.with(ctx).Where("tenant_id = ? AND source_id = ?", string(tenant), id).Take(&row).Error
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return follow.Source{}, sourceNotFound(id)
	case err != nil:
		return follow.Source{}, fmt.Errorf("get source: %w", err)
	}
	return row.source()
}

// change runs fn on the source's row read under its lock, within one transaction with the audit
// entry of action on the source, whose detail fn answers; fn answers skip when it wrote nothing
// (no entry, then). It answers the source as stored; not found when there is none.
func (s *SourceStore) change(ctx context.Context, tenant tenants.ID, id, action string, fn func(tx *gorm.DB, row *sourceRow) (detail string, skip bool, err error)) (follow.Source, error) {
	entry := audit.New(ctx, action, audit.SourceObject(id), 0, 0)
	var row sourceRow
	err := s.db.transact(ctx, func(tx *gorm.DB) error {
		err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Where("tenant_id = ? AND source_id = ?", string(tenant), id).Take(&row).Error
		switch {
		case errors.Is(err, gorm.ErrRecordNotFound):
			return sourceNotFound(id)
		case err != nil:
			return err
		}
		detail, skip, err := fn(tx, &row)
		if err != nil || skip {
			return err
		}
		entry.Detail = detail
		if err := s.db.record(tx, string(tenant), entry); err != nil {
			return err
		}
		row = sourceRow{} // a NULL read into a field leaves what it held
		return tx.Where("tenant_id = ? AND source_id = ?", string(tenant), id).Take(&row).Error
	})
	if err != nil {
		return follow.Source{}, err
	}
	return row.source()
}

// Update writes p on the source under its row's lock, with the audit entry saying what changed
// (never the token), and answers it as stored. A failing source is made due at p.At; a removing
// one is a conflict.
func (s *SourceStore) Update(ctx context.Context, tenant tenants.ID, id string, p follow.Patch) (follow.Source, error) {
	return s.change(ctx, tenant, id, "sources.update", func(tx *gorm.DB, row *sourceRow) (string, bool, error) {
		if row.State == follow.StateRemoving {
			return "", false, fault.Errorf(fault.Conflict, "source %q is being removed: conflict", id)
		}
		set := map[string]any{"updated_at": utc(p.At)}
		var changed []string
		if p.SealedToken != nil {
			set["token_sealed"] = *p.SealedToken
			if *p.SealedToken == "" {
				changed = append(changed, "token removed")
			} else {
				changed = append(changed, "token replaced")
			}
		}
		if p.Interval != nil {
			set["interval_seconds"] = *p.Interval
			changed = append(changed, fmt.Sprintf("intervalSeconds %d", *p.Interval))
		}
		if row.State == follow.StateFailing {
			set["next_sync_at"] = utc(p.At)
		}
		return strings.Join(changed, "; "), false, s.update(tx, row, set)
	})
}

// Removing marks the source removing under its row's lock, due at at and updated at at, with its
// audit entry, and answers it as stored. Its lease stays with the sync that holds it, which is
// refused its next Progress. A source removing already is answered as it is, with no second
// entry.
func (s *SourceStore) Removing(ctx context.Context, tenant tenants.ID, id string, at time.Time) (follow.Source, error) {
	return s.change(ctx, tenant, id, "sources.remove", func(tx *gorm.DB, row *sourceRow) (string, bool, error) {
		if row.State == follow.StateRemoving {
			return "", true, nil
		}
		// The lease stays: the replica syncing the source finds it removing at its next renewal,
		// stops, and gives the lease up; only then (or once it lapses) is the source removed, so
		// that no card of its sync is written after its cards were removed.
		set := map[string]any{"state": follow.StateRemoving, "next_sync_at": utc(at), "updated_at": utc(at)}
		return "removed: " + row.where(), false, s.update(tx, row, set)
	})
}

// Delete deletes the source if it is removing and owner holds its lease; otherwise (or if it is
// gone already) it does nothing.
func (s *SourceStore) Delete(ctx context.Context, tenant tenants.ID, id, owner string) error {
	_, err := s.leased(ctx, tenant, id, func(tx *gorm.DB, row *sourceRow) (bool, error) {
		if row.State != follow.StateRemoving || !row.heldBy(owner) {
			return false, nil
		}
		return true, tx.Exec("DELETE FROM sources WHERE tenant_id = ? AND source_id = ?", row.TenantID, row.SourceID).Error
	})
	return err
}

// Due lists the sources of active tenants due at now and not leased, removing ones included (the
// removal of their cards is due), those due longest first.
func (s *SourceStore) Due(ctx context.Context, now time.Time, limit int) ([]follow.Due, error) {
	var rows []struct {
		TenantID string
		SourceID string
		Kind     string
		State    string
	}
	err := s.db.with(ctx).Raw(`SELECT s.tenant_id, s.source_id, s.kind, s.state FROM sources s JOIN tenants t ON t.tenant_id = s.tenant_id
WHERE t.status = 'active' AND s.next_sync_at <= ? AND (s.lease_until IS NULL OR s.lease_until <= ?)
ORDER BY CASE WHEN s.kind = 'agentcards' THEN 0 ELSE 1 END, s.next_sync_at, s.tenant_id, s.source_id LIMIT ?`, utc(now), utc(now), limit).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("due sources: %w", err)
	}
	out := make([]follow.Due, len(rows))
	for i, r := range rows {
		out[i] = follow.Due{Tenant: tenants.ID(r.TenantID), ID: r.SourceID, Kind: r.Kind, State: r.State}
	}
	return out, nil
}

// leased runs fn on the source's row read under its lock, within one transaction; fn answers
// whether it went on. A source deleted meanwhile answers false.
func (s *SourceStore) leased(ctx context.Context, tenant tenants.ID, id string, fn func(tx *gorm.DB, row *sourceRow) (bool, error)) (bool, error) {
	went := false
	err := s.db.transact(ctx, func(tx *gorm.DB) error {
		var row sourceRow
		err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Where("tenant_id = ? AND source_id = ?", string(tenant), id).Take(&row).Error
		switch {
		case errors.Is(err, gorm.ErrRecordNotFound):
			return nil
		case err != nil:
			return err
		}
		went, err = fn(tx, &row)
		return err
	})
	return went, err
}

// update writes set to the source's row, as it is (updated_at is an admin's change's).
func (s *SourceStore) update(tx *gorm.DB, row *sourceRow, set map[string]any) error {
	return tx.Model(&sourceRow{}).Where("tenant_id = ? AND source_id = ?", row.TenantID, row.SourceID).UpdateColumns(set).Error
}

// Claim leases the source to owner until until if its lease has lapsed at now (or is owner's),
// and answers it as it was before the claim, with its sealed token and cursor. A removing
// source is claimed too: its follower removes its cards.
func (s *SourceStore) Claim(ctx context.Context, tenant tenants.ID, id, owner string, now, until time.Time) (follow.Claimed, bool, error) {
	var c follow.Claimed
	got, err := s.leased(ctx, tenant, id, func(tx *gorm.DB, row *sourceRow) (bool, error) {
		lapsed := !row.LeaseUntil.Valid || !row.LeaseUntil.Time.After(now) || row.LeaseOwner == owner
		if !lapsed {
			return false, nil
		}
		if err := s.update(tx, row, map[string]any{"lease_owner": owner, "lease_until": utc(until)}); err != nil {
			return false, err
		}
		src, err := row.source()
		if err != nil {
			return false, err
		}
		c = follow.Claimed{Tenant: tenant, Source: src, SealedToken: row.TokenSealed, Cursor: row.FeedCursor}
		if row.ListedAt.Valid {
			c.ListedAt = row.ListedAt.Time.UTC()
		}
		return true, nil
	})
	return c, got, err
}

// Progress writes p on owner's source under its row's lock, while owner holds the lease: the
// cursor, cards and conflicts (at most follow.MaxConflicts, as given) that p sets; Synced makes
// it active (a removing source stays removing), clears its failures and sets LastSyncAt to
// p.At. Release gives the lease up and makes it due at p.Next; otherwise a non-zero p.Until
// renews the lease, and a non-zero p.Next moves when it is due.
func (s *SourceStore) Progress(ctx context.Context, tenant tenants.ID, id, owner string, p follow.Progress) (bool, error) {
	return s.leased(ctx, tenant, id, func(tx *gorm.DB, row *sourceRow) (bool, error) {
		if !row.heldBy(owner) {
			return false, nil
		}
		if row.State == follow.StateRemoving && !p.Removing {
			// Its sync stops: it may only give the lease up, and the removal is due at once.
			if !p.Release {
				return false, nil
			}
			next := row.NextSyncAt
			if p.Next.Before(next) {
				next = p.Next
			}
			return true, s.update(tx, row, map[string]any{"lease_owner": "", "lease_until": nil, "next_sync_at": utc(next)})
		}
		set := map[string]any{}
		if p.Cursor != nil {
			set["feed_cursor"] = *p.Cursor
		}
		if p.Cards != nil {
			set["cards"] = *p.Cards
		}
		if p.Conflicts != nil {
			l := *p.Conflicts
			if len(l) > follow.MaxConflicts {
				l = l[:follow.MaxConflicts]
			}
			set["conflicts"] = jsonList(l)
		}
		if p.ListedAt != nil {
			set["listed_at"] = utc(*p.ListedAt)
		}
		if p.Active && row.State != follow.StateRemoving {
			set["state"], set["last_error"] = follow.StateActive, ""
		}
		if p.Synced {
			if row.State != follow.StateRemoving {
				set["state"] = follow.StateActive
			}
			set["failures"], set["last_error"], set["last_sync_at"] = 0, "", utc(p.At)
		}
		switch {
		case p.Release:
			set["lease_owner"], set["lease_until"], set["next_sync_at"] = "", nil, utc(p.Next)
		default:
			if !p.Until.IsZero() {
				set["lease_until"] = utc(p.Until)
			}
			if !p.Next.IsZero() {
				set["next_sync_at"] = utc(p.Next)
			}
		}
		if len(set) == 0 {
			return true, nil
		}
		return true, s.update(tx, row, set)
	})
}

// Fail records a failed sync of owner's source while owner holds the lease: one more failure,
// its error (clipped to its column's 300 bytes), failing (a removing source stays removing),
// due at f.Next, and the lease given up.
// removalRetry bounds the pause after a failure of a source being removed.
const removalRetry = 30 * time.Second

func (s *SourceStore) Fail(ctx context.Context, tenant tenants.ID, id, owner string, f follow.Failure) error {
	_, err := s.leased(ctx, tenant, id, func(tx *gorm.DB, row *sourceRow) (bool, error) {
		if !row.heldBy(owner) {
			return false, nil
		}
		state, next := follow.StateFailing, f.Next
		if f.Backoff != nil {
			next = f.At.Add(f.Backoff(row.Failures + 1))
		}
		if row.State == follow.StateRemoving {
			// The removal is tried again soon, whatever the sync that failed would have waited.
			state, next = follow.StateRemoving, f.At.Add(min(next.Sub(f.At), removalRetry))
		}
		msg := cards.Clip(strings.ToValidUTF8(f.Error, "\uFFFD"), maxSourceError)
		set := map[string]any{"failures": row.Failures + 1, "last_error": msg, "state": state, "next_sync_at": utc(next),
			"lease_owner": "", "lease_until": nil}
		return true, s.update(tx, row, set)
	})
	return err
}
