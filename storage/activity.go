package storage

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/agentcards/agentcards/cards/search"
	"github.com/agentcards/agentcards/migrations"
	"github.com/agentcards/agentcards/tenants"
)

// ActivityStore keeps when each tenant was last searched (tenant_activity).
type ActivityStore struct {
	db *DB
}

var _ search.ActivityStore = (*ActivityStore)(nil)

// NewActivityStore returns the activity store over db.
func NewActivityStore(db *DB) *ActivityStore { return &ActivityStore{db: db} }

// Searched records that the tenant was searched at at (a later time than stored wins).
func (s *ActivityStore) Searched(ctx context.Context, tenant tenants.ID, at time.Time) error {
	q := "INSERT INTO tenant_activity (tenant_id, searched_at) VALUES (?, ?) ON CONFLICT (tenant_id) DO UPDATE SET searched_at = excluded.searched_at"
	if s.db.dialect == migrations.MySQL {
		q = "INSERT INTO tenant_activity (tenant_id, searched_at) VALUES (?, ?) ON DUPLICATE KEY UPDATE searched_at = VALUES(searched_at)"
	}
	if err := s.db.grouped(ctx, func(tx *gorm.DB) error { return tx.Exec(q, string(tenant), utc(at)).Error }); err != nil {
		return fmt.Errorf("record a search of tenant %q: %w", tenant, err)
	}
	return nil
}

// Recent lists the active tenants searched at or after since, most recently searched first.
func (s *ActivityStore) Recent(ctx context.Context, since time.Time) ([]tenants.ID, error) {
	var ids []string
	err := s.db.with(ctx).Raw(`SELECT a.tenant_id FROM tenant_activity a JOIN tenants t ON t.tenant_id = a.tenant_id
 WHERE a.searched_at >= ? AND t.status = 'active' ORDER BY a.searched_at DESC`, utc(since)).Scan(&ids).Error
	if err != nil {
		return nil, fmt.Errorf("recently searched tenants: %w", err)
	}
	out := make([]tenants.ID, len(ids))
	for i, id := range ids {
		out[i] = tenants.ID(id)
	}
	return out, nil
}
