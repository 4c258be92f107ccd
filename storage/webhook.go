package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards/webhooks"
	"github.com/agentcards/agentcards/migrations"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/tenants/audit"
)

// WebhookStore keeps the tenants' webhook subscriptions and their delivery records (migration
// 20). Each write of delivery state reads the subscription's row under its lock first, and goes
// on only while the writer holds the delivery lease: a replica whose lease lapsed (it was slow,
// or stopped) cannot move the cursor that another replica now advances.
type WebhookStore struct{ db *DB }

// NewWebhookStore returns the store of webhook subscriptions over db.
func NewWebhookStore(db *DB) *WebhookStore { return &WebhookStore{db: db} }

var (
	_ webhooks.Store         = (*WebhookStore)(nil)
	_ webhooks.DeliveryStore = (*WebhookStore)(nil)
)

type webhookRow struct {
	TenantID      string       `gorm:"column:tenant_id"`
	WebhookID     string       `gorm:"column:webhook_id"`
	URL           string       `gorm:"column:url"`
	Types         string       `gorm:"column:types"`
	AgentIDs      string       `gorm:"column:agent_ids"`
	State         string       `gorm:"column:state"`
	FeedCursor    string       `gorm:"column:feed_cursor"`
	Recent        string       `gorm:"column:recent"`
	Failures      int          `gorm:"column:failures"`
	FailingSince  sql.NullTime `gorm:"column:failing_since"`
	LastError     string       `gorm:"column:last_error"`
	NextAttemptAt time.Time    `gorm:"column:next_attempt_at"`
	LeaseOwner    string       `gorm:"column:lease_owner"`
	LeaseUntil    sql.NullTime `gorm:"column:lease_until"`
	CreatedAt     time.Time    `gorm:"column:created_at"`
	UpdatedAt     time.Time    `gorm:"column:updated_at"`
}

func (webhookRow) TableName() string { return "webhooks" }

// webhook converts a row to the domain's subscription.
func (r webhookRow) webhook() (webhooks.Webhook, error) {
	w := webhooks.Webhook{ID: r.WebhookID, URL: r.URL, State: r.State, Failures: r.Failures, LastError: r.LastError,
		NextAttemptAt: r.NextAttemptAt.UTC(), CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
	if err := json.Unmarshal([]byte(r.Types), &w.Types); err != nil {
		return w, fmt.Errorf("webhook %s: types: %w", r.WebhookID, err)
	}
	if err := json.Unmarshal([]byte(r.AgentIDs), &w.AgentIDs); err != nil {
		return w, fmt.Errorf("webhook %s: agentIds: %w", r.WebhookID, err)
	}
	if r.FailingSince.Valid {
		t := r.FailingSince.Time.UTC()
		w.FailingSince = &t
	}
	return w, nil
}

// jsonList is a filter column: a JSON array, "[]" for none.
func jsonList(l []string) string {
	if len(l) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(l) // strings always marshal
	return string(b)
}

func webhookNotFound(id string) error {
	return fault.Errorf(fault.NotFound, "webhook %q: not found", id)
}

// Create stores w following the feed from cursor, with its audit entry, unless the tenant has max
// subscriptions already (conflict) or does not exist (not found). The tenant row is locked
// meanwhile, so that concurrent creates count each other: on Postgres NO KEY UPDATE, as Update
// takes it, which concurrent card inserts checking their foreign key do not wait for.
func (s *WebhookStore) Create(ctx context.Context, tenant tenants.ID, w webhooks.Webhook, cursor string, max int) (webhooks.Webhook, error) {
	entry := audit.New(ctx, "webhooks.create", audit.WebhookObject(w.ID), 0, 0)
	entry.Detail = "created: " + w.URL
	row := webhookRow{TenantID: string(tenant), WebhookID: w.ID, URL: w.URL, Types: jsonList(w.Types), AgentIDs: jsonList(w.AgentIDs),
		State: w.State, FeedCursor: cursor, Recent: "[]", NextAttemptAt: utc(w.NextAttemptAt), CreatedAt: utc(w.CreatedAt), UpdatedAt: utc(w.UpdatedAt)}
	err := s.db.transact(ctx, func(tx *gorm.DB) error {
		if err := s.db.lockTenant(tx, tenant); err != nil {
			return err
		}
		var n int64
		if err := tx.Model(&webhookRow{}).Where("tenant_id = ?", string(tenant)).Count(&n).Error; err != nil {
			return err
		}
		if n >= int64(max) {
			return fault.Errorf(fault.Conflict, "the tenant has %d webhooks, the most it may have; remove one first", n)
		}
		if err := tx.Create(&row).Error; err != nil {
			return err
		}
		return s.db.record(tx, string(tenant), entry)
	})
	if err != nil {
		return webhooks.Webhook{}, err
	}
	return row.webhook()
}

// lockTenant locks the tenant's row for the rest of tx, so that the transactions that count a
// tenant's rows of some kind before adding one count each other: on Postgres NO KEY UPDATE,
// which concurrent card inserts checking their foreign key do not wait for. Not found when there
// is no such tenant.
func (db *DB) lockTenant(tx *gorm.DB, tenant tenants.ID) error {
	strength := "UPDATE"
	if db.dialect == migrations.Postgres {
		strength = "NO KEY UPDATE"
	}
	var t tenantRow
	err := tx.Clauses(clause.Locking{Strength: strength}).Select("tenant_id").Where("tenant_id = ?", string(tenant)).Take(&t).Error
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return fault.Errorf(fault.NotFound, "tenant %q: not found", tenant)
	case err != nil:
		return err
	}
	return nil
}

// List answers the tenant's subscriptions, oldest first.
func (s *WebhookStore) List(ctx context.Context, tenant tenants.ID) ([]webhooks.Webhook, error) {
	var rows []webhookRow
	if err := s.db.with(ctx).Where("tenant_id = ?", string(tenant)).Order("created_at, webhook_id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list webhooks: %w", err)
	}
	out := make([]webhooks.Webhook, 0, len(rows))
	for _, r := range rows {
		w, err := r.webhook()
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, nil
}

// Get answers one subscription.
func (s *WebhookStore) Get(ctx context.Context, tenant tenants.ID, id string) (webhooks.Webhook, error) {
	var row webhookRow
	err := s.db.with(ctx).Where("tenant_id = ? AND webhook_id = ?", string(tenant), id).Take(&row).Error
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return webhooks.Webhook{}, webhookNotFound(id)
	case err != nil:
		return webhooks.Webhook{}, fmt.Errorf("get webhook: %w", err)
	}
	return row.webhook()
}

// Update applies p to the subscription under its row's lock, with its audit entry (saying what
// changed), and answers it as stored. Setting it active when it is not clears its failures and
// makes it due at p.At.
func (s *WebhookStore) Update(ctx context.Context, tenant tenants.ID, id string, p webhooks.Patch) (webhooks.Webhook, error) {
	entry := audit.New(ctx, "webhooks.update", audit.WebhookObject(id), 0, 0)
	var row webhookRow
	err := s.db.transact(ctx, func(tx *gorm.DB) error {
		err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Where("tenant_id = ? AND webhook_id = ?", string(tenant), id).Take(&row).Error
		switch {
		case errors.Is(err, gorm.ErrRecordNotFound):
			return webhookNotFound(id)
		case err != nil:
			return err
		}
		set := map[string]any{"updated_at": utc(p.At)}
		var changed []string
		if p.URL != nil {
			set["url"] = *p.URL
			changed = append(changed, "url "+*p.URL)
		}
		if p.Types != nil {
			set["types"] = jsonList(*p.Types)
			changed = append(changed, "types "+jsonList(*p.Types))
		}
		if p.AgentIDs != nil {
			set["agent_ids"] = jsonList(*p.AgentIDs)
			changed = append(changed, "agentIds "+jsonList(*p.AgentIDs))
		}
		if p.State != nil && *p.State != row.State {
			set["state"] = *p.State
			changed = append(changed, "state "+*p.State)
			if *p.State == webhooks.StateActive {
				set["failures"], set["failing_since"], set["last_error"], set["next_attempt_at"] = 0, nil, "", utc(p.At)
			}
		}
		if err := tx.Model(&webhookRow{}).Where("tenant_id = ? AND webhook_id = ?", string(tenant), id).UpdateColumns(set).Error; err != nil {
			return err
		}
		entry.Detail = strings.Join(changed, "; ")
		if err := s.db.record(tx, string(tenant), entry); err != nil {
			return err
		}
		row = webhookRow{} // a NULL read into a field leaves what it held
		return tx.Where("tenant_id = ? AND webhook_id = ?", string(tenant), id).Take(&row).Error
	})
	if err != nil {
		return webhooks.Webhook{}, err
	}
	return row.webhook()
}

// Remove removes the subscription and its delivery records, with its audit entry.
func (s *WebhookStore) Remove(ctx context.Context, tenant tenants.ID, id string) error {
	entry := audit.New(ctx, "webhooks.remove", audit.WebhookObject(id), 0, 0)
	return s.db.transact(ctx, func(tx *gorm.DB) error {
		var row webhookRow
		err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Select("url").Where("tenant_id = ? AND webhook_id = ?", string(tenant), id).Take(&row).Error
		switch {
		case errors.Is(err, gorm.ErrRecordNotFound):
			return webhookNotFound(id)
		case err != nil:
			return err
		}
		if err := tx.Exec("DELETE FROM webhook_deliveries WHERE tenant_id = ? AND webhook_id = ?", string(tenant), id).Error; err != nil {
			return err
		}
		if err := tx.Exec("DELETE FROM webhooks WHERE tenant_id = ? AND webhook_id = ?", string(tenant), id).Error; err != nil {
			return err
		}
		entry.Detail = "removed: " + row.URL
		return s.db.record(tx, string(tenant), entry)
	})
}

type deliveryRow struct {
	Seq        int64     `gorm:"column:seq;primaryKey;autoIncrement"`
	TenantID   string    `gorm:"column:tenant_id"`
	WebhookID  string    `gorm:"column:webhook_id"`
	EventID    string    `gorm:"column:event_id"`
	EventType  string    `gorm:"column:event_type"`
	AgentID    string    `gorm:"column:agent_id"`
	StatusCode int       `gorm:"column:status_code"`
	OK         bool      `gorm:"column:ok"`
	ErrorText  string    `gorm:"column:error_text"`
	LatencyMs  int64     `gorm:"column:latency_ms"`
	At         time.Time `gorm:"column:attempted_at"`
}

func (deliveryRow) TableName() string { return "webhook_deliveries" }

func (r deliveryRow) delivery() webhooks.Delivery {
	return webhooks.Delivery{Seq: r.Seq, EventID: r.EventID, Type: r.EventType, AgentID: r.AgentID, Status: r.StatusCode, OK: r.OK,
		Error: r.ErrorText, LatencyMs: r.LatencyMs, At: r.At.UTC()}
}

// Deliveries answers the subscription's delivery records, newest first, at most limit.
func (s *WebhookStore) Deliveries(ctx context.Context, tenant tenants.ID, id string, limit int) ([]webhooks.Delivery, error) {
	var rows []deliveryRow
	if err := s.db.with(ctx).Where("tenant_id = ? AND webhook_id = ?", string(tenant), id).Order("seq DESC").Limit(limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list deliveries: %w", err)
	}
	out := make([]webhooks.Delivery, len(rows))
	for i, r := range rows {
		out[i] = r.delivery()
	}
	return out, nil
}

// Record appends a delivery record and deletes the subscription's records older than its newest
// keep. A record of a subscription removed meanwhile is dropped.
func (s *WebhookStore) Record(ctx context.Context, tenant tenants.ID, id string, d webhooks.Delivery, keep int) error {
	row := deliveryRow{TenantID: string(tenant), WebhookID: id, EventID: d.EventID, EventType: d.Type, AgentID: d.AgentID,
		StatusCode: d.Status, OK: d.OK, ErrorText: d.Error, LatencyMs: d.LatencyMs, At: utc(d.At)}
	return s.db.transact(ctx, func(tx *gorm.DB) error {
		var n int64
		if err := tx.Model(&webhookRow{}).Where("tenant_id = ? AND webhook_id = ?", string(tenant), id).Count(&n).Error; err != nil || n == 0 {
			return err
		}
		if err := tx.Create(&row).Error; err != nil {
			return err
		}
		// The oldest record to keep; MySQL allows no subquery on the table a DELETE deletes from.
		var oldest []int64
		if err := tx.Raw("SELECT seq FROM webhook_deliveries WHERE tenant_id = ? AND webhook_id = ? ORDER BY seq DESC LIMIT 1 OFFSET ?",
			string(tenant), id, keep-1).Scan(&oldest).Error; err != nil || len(oldest) == 0 {
			return err
		}
		return tx.Exec("DELETE FROM webhook_deliveries WHERE tenant_id = ? AND webhook_id = ? AND seq < ?", string(tenant), id, oldest[0]).Error
	})
}

// Due lists the subscriptions of active tenants, not disabled, due at now and not leased.
func (s *WebhookStore) Due(ctx context.Context, now time.Time, limit int) ([]webhooks.Due, error) {
	var rows []struct {
		TenantID  string
		WebhookID string
	}
	err := s.db.with(ctx).Raw(`SELECT w.tenant_id, w.webhook_id FROM webhooks w JOIN tenants t ON t.tenant_id = w.tenant_id
WHERE t.status = 'active' AND w.state <> ? AND w.next_attempt_at <= ? AND (w.lease_until IS NULL OR w.lease_until <= ?)
ORDER BY w.next_attempt_at, w.tenant_id, w.webhook_id LIMIT ?`, webhooks.StateDisabled, utc(now), utc(now), limit).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("due webhooks: %w", err)
	}
	out := make([]webhooks.Due, len(rows))
	for i, r := range rows {
		out[i] = webhooks.Due{Tenant: tenants.ID(r.TenantID), ID: r.WebhookID}
	}
	return out, nil
}

// leased runs fn on the subscription's row read under its lock, within one transaction; fn
// answers whether it went on. A subscription removed meanwhile answers false.
func (s *WebhookStore) leased(ctx context.Context, tenant tenants.ID, id string, fn func(tx *gorm.DB, row *webhookRow) (bool, error)) (bool, error) {
	went := false
	err := s.db.transact(ctx, func(tx *gorm.DB) error {
		var row webhookRow
		err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Where("tenant_id = ? AND webhook_id = ?", string(tenant), id).Take(&row).Error
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

// update writes set to the subscription's row, as it is (updated_at is an admin's change's).
func (s *WebhookStore) update(tx *gorm.DB, row *webhookRow, set map[string]any) error {
	return tx.Model(&webhookRow{}).Where("tenant_id = ? AND webhook_id = ?", row.TenantID, row.WebhookID).UpdateColumns(set).Error
}

// held reports whether owner holds the row's lease.
func held(row *webhookRow, owner string) bool { return row.LeaseOwner == owner && row.LeaseUntil.Valid }

// Claim leases the subscription to owner until until, if it is not disabled and its lease has
// lapsed at now (or is owner's), and answers it with its cursor.
func (s *WebhookStore) Claim(ctx context.Context, tenant tenants.ID, id, owner string, now, until time.Time) (webhooks.Claimed, bool, error) {
	var c webhooks.Claimed
	got, err := s.leased(ctx, tenant, id, func(tx *gorm.DB, row *webhookRow) (bool, error) {
		lapsed := !row.LeaseUntil.Valid || !row.LeaseUntil.Time.After(now) || row.LeaseOwner == owner
		if row.State == webhooks.StateDisabled || !lapsed {
			return false, nil
		}
		if err := s.update(tx, row, map[string]any{"lease_owner": owner, "lease_until": utc(until)}); err != nil {
			return false, err
		}
		w, err := row.webhook()
		if err != nil {
			return false, err
		}
		c = webhooks.Claimed{Tenant: tenant, Webhook: w, Cursor: row.FeedCursor}
		if err := json.Unmarshal([]byte(row.Recent), &c.Recent); err != nil {
			return false, fmt.Errorf("webhook %s: recent: %w", id, err)
		}
		return true, nil
	})
	return c, got, err
}

// Advance stores owner's subscription's cursor and the entries delivered it may read again, and
// renews its lease; delivered clears its failures.
func (s *WebhookStore) Advance(ctx context.Context, tenant tenants.ID, id, owner, cursor string, recent []int64, delivered bool, until time.Time) (bool, error) {
	if recent == nil {
		recent = []int64{}
	}
	list, err := json.Marshal(recent)
	if err != nil {
		return false, err
	}
	return s.leased(ctx, tenant, id, func(tx *gorm.DB, row *webhookRow) (bool, error) {
		if !held(row, owner) {
			return false, nil
		}
		set := map[string]any{"feed_cursor": cursor, "recent": string(list), "lease_until": utc(until)}
		if delivered && row.Failures > 0 {
			set["failures"], set["failing_since"], set["last_error"] = 0, nil, ""
			if row.State == webhooks.StateFailing {
				set["state"] = webhooks.StateActive
			}
		}
		return true, s.update(tx, row, set)
	})
}

// Fail records a failed attempt of owner's subscription (failing since its first failure in a
// row, or disabled) and gives up the lease.
func (s *WebhookStore) Fail(ctx context.Context, tenant tenants.ID, id, owner string, f webhooks.Failure) error {
	_, err := s.leased(ctx, tenant, id, func(tx *gorm.DB, row *webhookRow) (bool, error) {
		if !held(row, owner) {
			return false, nil
		}
		state := webhooks.StateFailing
		if f.Disable || row.State == webhooks.StateDisabled {
			state = webhooks.StateDisabled
		}
		set := map[string]any{"failures": row.Failures + 1, "last_error": f.Error, "next_attempt_at": utc(f.Next), "state": state,
			"lease_owner": "", "lease_until": nil}
		if !row.FailingSince.Valid {
			set["failing_since"] = utc(f.At)
		}
		return true, s.update(tx, row, set)
	})
	return err
}

// Release gives up owner's lease of the subscription.
func (s *WebhookStore) Release(ctx context.Context, tenant tenants.ID, id, owner string) error {
	_, err := s.leased(ctx, tenant, id, func(tx *gorm.DB, row *webhookRow) (bool, error) {
		if !held(row, owner) {
			return false, nil
		}
		return true, s.update(tx, row, map[string]any{"lease_owner": "", "lease_until": nil})
	})
	return err
}
