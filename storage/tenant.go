package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/migrations"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/tenants/audit"
)

// TenantStore keeps tenants. Creating a tenant seeds its rules, and deleting one removes
// everything it owns, each in one transaction.
type TenantStore struct {
	db *DB
}

var _ tenants.Store = (*TenantStore)(nil)

// NewTenantStore returns the tenant store over db.
func NewTenantStore(db *DB) *TenantStore { return &TenantStore{db: db} }

// tenantRow is a row of the tenants table.
type tenantRow struct {
	TenantID string `gorm:"column:tenant_id;primaryKey"`
	Name     string `gorm:"column:name"`
	Status   string `gorm:"column:status"`
	// PolicyRevision is moved only by rule writes (see bumpPolicyRevision).
	PolicyRevision int64 `gorm:"column:policy_revision"`
	RefuseOffline  bool  `gorm:"column:refuse_offline_delegation"`
	HideTasks      bool  `gorm:"column:hide_delegation_tasks"`
	// Synonyms are the tenant's synonym sets as JSON (see synonyms.go); written only there.
	Synonyms string `gorm:"column:synonyms"`
	// Trust is the tenant's trust policy as JSON, and TrustPending the domains whose cards its
	// changes have yet to weigh again (see trust.go); written only there.
	Trust        string    `gorm:"column:trust"`
	TrustPending string    `gorm:"column:trust_pending"`
	CreatedAt    time.Time `gorm:"column:created_at;autoCreateTime:false"`
	UpdatedAt    time.Time `gorm:"column:updated_at;autoUpdateTime:false"`
}

func (tenantRow) TableName() string { return "tenants" }

func newTenantRow(t tenants.Tenant) tenantRow {
	return tenantRow{
		TenantID: string(t.ID), Name: t.Name, Status: string(t.Status), RefuseOffline: t.RefuseOfflineDelegation,
		HideTasks: t.HideDelegationTasks, Synonyms: "[]", Trust: "[]", TrustPending: "{}",
		CreatedAt: utc(t.CreatedAt), UpdatedAt: utc(t.UpdatedAt),
	}
}

// tenant is the row's tenant without its synonym sets (withSynonyms adds them).
func (r tenantRow) tenant() tenants.Tenant {
	return tenants.Tenant{
		ID: tenants.ID(r.TenantID), Name: r.Name, Status: tenants.Status(r.Status),
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(), PolicyRevision: r.PolicyRevision,
		RefuseOfflineDelegation: r.RefuseOffline, HideDelegationTasks: r.HideTasks,
	}
}

// withSynonyms is the row's whole tenant, its synonym sets read from their column.
func (r tenantRow) withSynonyms() (tenants.Tenant, error) {
	t := r.tenant()
	var err error
	t.Synonyms, err = readSynonyms(r.TenantID, r.Synonyms)
	return t, err
}

// Create inserts the tenant with its seed rules (the built-in roles, and the admin role for each
// of admins); tenants.ErrExists if the id is taken.
func (s *TenantStore) Create(ctx context.Context, t tenants.Tenant, admins []string) error {
	row := newTenantRow(t)
	rules, err := ruleRows(row.TenantID, authz.SeedRules(row.TenantID, admins))
	if err != nil {
		return err
	}
	entry := audit.New(ctx, "tenants.create", audit.TenantObject, 0, 0)
	entry.Detail = tenantDetail(tenantRow{}, row)
	if len(admins) > 0 {
		entry.Detail += "; admins " + strings.Join(admins, ", ")
	}
	err = s.db.writing(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(&row).Error; err != nil {
			return err
		}
		if err := s.db.record(tx, row.TenantID, entry); err != nil {
			return err
		}
		if len(rules) == 0 {
			return nil
		}
		return tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&rules).Error
	})
	switch {
	case errors.Is(err, gorm.ErrDuplicatedKey):
		return fault.Errorf(fault.Conflict, "tenant %q: already exists", row.TenantID)
	case err != nil:
		return fmt.Errorf("create tenant %q: %w", row.TenantID, err)
	}
	return nil
}

// Get returns the tenant with its synonym sets; tenants.ErrNotFound if there is none.
func (s *TenantStore) Get(ctx context.Context, id tenants.ID) (tenants.Tenant, error) {
	// Every tenant-scoped request reads its tenant row, so this one query skips GORM's
	// reflection and is prepared once.
	r, err := s.db.prepare("SELECT tenant_id, name, status, policy_revision, refuse_offline_delegation, hide_delegation_tasks, synonyms, created_at, updated_at FROM tenants WHERE tenant_id = ?").
		queryRow(ctx, string(id))
	if err != nil {
		return tenants.Tenant{}, fmt.Errorf("get tenant %q: %w", string(id), err)
	}
	var row tenantRow
	err = r.Scan(&row.TenantID, &row.Name, &row.Status, &row.PolicyRevision, &row.RefuseOffline, &row.HideTasks, &row.Synonyms, &row.CreatedAt, &row.UpdatedAt)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return tenants.Tenant{}, fault.Errorf(fault.NotFound, "tenant %q: not found", string(id))
	case err != nil:
		return tenants.Tenant{}, fmt.Errorf("get tenant %q: %w", string(id), err)
	}
	return row.withSynonyms()
}

// List returns every tenant in id order, each with its synonym sets.
func (s *TenantStore) List(ctx context.Context) ([]tenants.Tenant, error) {
	var rows []tenantRow
	if err := s.db.with(ctx).Order("tenant_id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list tenants: %w", err)
	}
	out := make([]tenants.Tenant, 0, len(rows))
	for _, r := range rows {
		t, err := r.withSynonyms()
		if err != nil {
			return nil, fmt.Errorf("list tenants: %w", err)
		}
		out = append(out, t)
	}
	return out, nil
}

// Update stores the tenant's name, status and update time; tenants.ErrNotFound if there is none.
// Its audit entry says what changed.
func (s *TenantStore) Update(ctx context.Context, t tenants.Tenant) error {
	row := newTenantRow(t)
	entry := audit.New(ctx, "tenants.update", audit.TenantObject, 0, 0)
	return s.db.transact(ctx, func(tx *gorm.DB) error {
		// Locked as the UPDATE below would lock it, for the detail: on Postgres NO KEY UPDATE,
		// which the key-share locks of concurrent inserts of the tenant's cards, records and
		// rules do not wait for (FOR UPDATE would queue a suspension behind them, and them
		// behind it).
		strength := "UPDATE"
		if s.db.dialect == migrations.Postgres {
			strength = "NO KEY UPDATE"
		}
		var old tenantRow
		err := tx.Clauses(clause.Locking{Strength: strength}).Where("tenant_id = ?", row.TenantID).Take(&old).Error
		switch {
		case errors.Is(err, gorm.ErrRecordNotFound):
			return fault.Errorf(fault.NotFound, "tenant %q: not found", row.TenantID)
		case err != nil:
			return fmt.Errorf("update tenant %q: %w", row.TenantID, err)
		}
		err = tx.Model(&tenantRow{}).Where("tenant_id = ?", row.TenantID).
			Updates(map[string]any{"name": row.Name, "status": row.Status, "refuse_offline_delegation": row.RefuseOffline,
				"hide_delegation_tasks": row.HideTasks, "updated_at": row.UpdatedAt}).Error
		if err != nil {
			return fmt.Errorf("update tenant %q: %w", row.TenantID, err)
		}
		entry.Detail = tenantDetail(old, row)
		return s.db.record(tx, row.TenantID, entry)
	})
}

// tenantDetail says what a tenant write changed from old (the zero row for a new tenant).
func tenantDetail(old, row tenantRow) string {
	var parts []string
	if old.Name != row.Name {
		parts = append(parts, fmt.Sprintf("name %q", row.Name))
	}
	if old.Status != row.Status {
		parts = append(parts, "status "+row.Status)
	}
	if old.RefuseOffline != row.RefuseOffline {
		parts = append(parts, fmt.Sprintf("refuseOfflineDelegation %t", row.RefuseOffline))
	}
	if old.HideTasks != row.HideTasks {
		parts = append(parts, fmt.Sprintf("hideDelegationTasks %t", row.HideTasks))
	}
	if len(parts) == 0 {
		return "no change"
	}
	return strings.Join(parts, "; ")
}

// Delete removes the tenant with its cards, rules, delegations, endpoint secrets, webhooks,
// followed sources and change history in one transaction, then appends a 'purge' entry to the
// change feed so followers drop what they hold for it.
func (s *TenantStore) Delete(ctx context.Context, id tenants.ID) error {
	tenant := string(id)
	return retryDeadlocks(ctx, func() error { return s.delete(ctx, tenant) })
}

func (s *TenantStore) delete(ctx context.Context, tenant string) error {
	// The tenant's trail outlives it (see archiveTrail), its deletion last.
	entry := audit.New(ctx, "tenants.delete", audit.TenantObject, 0, 0)
	var notice string
	err := s.db.writing(ctx).Transaction(func(tx *gorm.DB) error {
		// The agents' tombstones first, as a card create or delete takes them (a create then
		// checks its foreign key on the tenant row): taken after the tenant row, they made a
		// cycle with a create on Postgres. A create that comes after this still waits for the
		// tenant row, and then fails.
		if err := tx.Exec("DELETE FROM card_tombstones WHERE tenant_id = ?", tenant).Error; err != nil {
			return fmt.Errorf("delete tenant %q: %w", tenant, err)
		}
		// Then lock the tenant row: concurrent card and rule inserts check their foreign key
		// against it, so they wait and then fail instead of leaving orphans behind.
		var row tenantRow
		err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Where("tenant_id = ?", tenant).Take(&row).Error
		switch {
		case errors.Is(err, gorm.ErrRecordNotFound):
			return fault.Errorf(fault.NotFound, "tenant %q: not found", tenant)
		case err != nil:
			return fmt.Errorf("delete tenant %q: %w", tenant, err)
		}
		for _, model := range []any{&deliveryRow{}, &webhookRow{}, &sourceRow{}, &cardRow{}, &ruleRow{}, &changeRow{}, &delegationRow{}, &secretRow{}, &tenantRow{}} {
			if err := tx.Where("tenant_id = ?", tenant).Delete(model).Error; err != nil {
				return fmt.Errorf("delete tenant %q: %w", tenant, err)
			}
		}
		if err := tx.Exec("DELETE FROM tenant_activity WHERE tenant_id = ?", tenant).Error; err != nil {
			return fmt.Errorf("delete tenant %q: %w", tenant, err)
		}
		if err := tx.Exec("DELETE FROM card_liveness WHERE tenant_id = ?", tenant).Error; err != nil {
			return fmt.Errorf("delete tenant %q: %w", tenant, err)
		}
		archived, err := archiveTrail(tx, tenant)
		if err != nil {
			return fmt.Errorf("delete tenant %q: %w", tenant, err)
		}
		if err := s.db.record(tx, archived, entry); err != nil {
			return fmt.Errorf("delete tenant %q: %w", tenant, err)
		}
		if notice, err = s.db.appendChange(tx, tenant, "", opPurge, 0); err != nil {
			return fmt.Errorf("delete tenant %q: %w", tenant, err)
		}
		return nil
	})
	if err == nil {
		s.db.notifyAfter(notice) // once committed, as a card write's (see notifyAfter)
	}
	return err
}
