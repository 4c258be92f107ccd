package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards/delegation"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/tenants/audit"
)

// SecretStore keeps sealed endpoint secrets (table endpoint_secrets), apart from the card
// documents so that no card read can return them.
type SecretStore struct {
	db *DB
}

var _ delegation.SecretStore = (*SecretStore)(nil)

// NewSecretStore returns the secret store over db.
func NewSecretStore(db *DB) *SecretStore { return &SecretStore{db: db} }

type secretRow struct {
	TenantID  string    `gorm:"column:tenant_id;primaryKey"`
	AgentID   string    `gorm:"column:agent_id;primaryKey"`
	Endpoint  string    `gorm:"column:endpoint"`
	Sealed    string    `gorm:"column:sealed"`
	UpdatedAt time.Time `gorm:"column:updated_at;autoUpdateTime:false"`
}

func (secretRow) TableName() string { return "endpoint_secrets" }

// PutSecret stores or replaces the sealed secret and the endpoint it is bound to.
func (s *SecretStore) PutSecret(ctx context.Context, tenant tenants.ID, agentID string, sec delegation.SealedSecret, at time.Time) error {
	row := secretRow{TenantID: string(tenant), AgentID: agentID, Endpoint: sec.Endpoint, Sealed: sec.Sealed, UpdatedAt: utc(at)}
	entry := audit.New(ctx, "secrets.set", audit.SecretObject(agentID), 0, 0)
	entry.Detail = "endpoint " + sec.Endpoint
	if sec.Header != "" {
		entry.Detail += "; header " + sec.Header
	}
	err := s.db.transact(ctx, func(tx *gorm.DB) error {
		err := tx.Clauses(clause.OnConflict{
			Columns:   []clause.Column{{Name: "tenant_id"}, {Name: "agent_id"}},
			DoUpdates: clause.AssignmentColumns([]string{"endpoint", "sealed", "updated_at"}),
		}).Create(&row).Error
		if err != nil {
			return err
		}
		return s.db.record(tx, string(tenant), entry)
	})
	if err != nil {
		return fmt.Errorf("put secret of %q: %w", agentID, err)
	}
	return nil
}

// GetSecret returns the sealed secret; delegation.ErrNotFound when there is none.
func (s *SecretStore) GetSecret(ctx context.Context, tenant tenants.ID, agentID string) (delegation.SealedSecret, error) {
	// Asked on every delegation, most often about cards without a secret.
	r, err := s.db.prepare("SELECT endpoint, sealed FROM endpoint_secrets WHERE tenant_id = ? AND agent_id = ?").
		queryRow(ctx, string(tenant), agentID)
	if err != nil {
		return delegation.SealedSecret{}, fmt.Errorf("get secret of %q: %w", agentID, err)
	}
	var row secretRow
	err = r.Scan(&row.Endpoint, &row.Sealed)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return delegation.SealedSecret{}, fault.Errorf(fault.NotFound, "secret of %q: not found", agentID)
	case err != nil:
		return delegation.SealedSecret{}, fmt.Errorf("get secret of %q: %w", agentID, err)
	}
	return delegation.SealedSecret{Endpoint: row.Endpoint, Sealed: row.Sealed}, nil
}

// getSecretsChunk bounds the ids of one query of GetSecrets, below every dialect's limit on
// bound parameters.
const getSecretsChunk = 500

// GetSecrets returns the sealed secrets of those of the agents that have one.
func (s *SecretStore) GetSecrets(ctx context.Context, tenant tenants.ID, agentIDs []string) (map[string]delegation.SealedSecret, error) {
	out := make(map[string]delegation.SealedSecret)
	for chunk := range slices.Chunk(agentIDs, getSecretsChunk) {
		var rows []secretRow
		err := s.db.gorm.WithContext(ctx).Select("agent_id", "endpoint", "sealed").
			Where("tenant_id = ? AND agent_id IN ?", string(tenant), chunk).Find(&rows).Error
		if err != nil {
			return nil, fmt.Errorf("get secrets: %w", err)
		}
		for _, r := range rows {
			out[r.AgentID] = delegation.SealedSecret{Endpoint: r.Endpoint, Sealed: r.Sealed}
		}
	}
	return out, nil
}

// DeleteSecret removes the secret; delegation.ErrNotFound when there was none.
func (s *SecretStore) DeleteSecret(ctx context.Context, tenant tenants.ID, agentID string) error {
	entry := audit.New(ctx, "secrets.remove", audit.SecretObject(agentID), 0, 0)
	err := s.db.transact(ctx, func(tx *gorm.DB) error {
		res := tx.Where("tenant_id = ? AND agent_id = ?", string(tenant), agentID).Delete(&secretRow{})
		if res.Error != nil {
			return fmt.Errorf("delete secret of %q: %w", agentID, res.Error)
		}
		if res.RowsAffected == 0 {
			return fault.Errorf(fault.NotFound, "secret of %q: not found", agentID)
		}
		return s.db.record(tx, string(tenant), entry)
	})
	return err
}
