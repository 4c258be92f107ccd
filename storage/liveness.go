package storage

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/agentcards/agentcards/cards/liveness"
	"github.com/agentcards/agentcards/migrations"
	"github.com/agentcards/agentcards/tenants"
)

// LivenessStore keeps the liveness records of cards (card_liveness).
type LivenessStore struct {
	db *DB
}

var _ liveness.Store = (*LivenessStore)(nil)

// NewLivenessStore returns the liveness store over db.
func NewLivenessStore(db *DB) *LivenessStore { return &LivenessStore{db: db} }

// beatsPerStatement bounds the rows of one insert (five parameters each).
const beatsPerStatement = 200

// beatUpsert is the tail of the heartbeat insert per dialect. A row of another card drops what
// probes recorded of that card. MySQL evaluates the assignments left to right, each seeing the
// ones before, so card_id is assigned after the comparisons that read it; the others evaluate
// every expression against the row as it was.
func (s *LivenessStore) beatUpsert() string {
	if s.db.dialect == migrations.MySQL {
		same := "card_id = VALUES(card_id)"
		return ` ON DUPLICATE KEY UPDATE probed_at = IF(` + same + `, probed_at, NULL), down_at = IF(` + same + `, down_at, NULL),
 checked_at = IF(` + same + `, checked_at, NULL), probe_failures = IF(` + same + `, probe_failures, 0),
 probe_latency_ms = IF(` + same + `, probe_latency_ms, 0), probe_error = IF(` + same + `, probe_error, ''),
 seen_at = VALUES(seen_at), updated_at = VALUES(updated_at), card_id = VALUES(card_id)`
	}
	same := "card_liveness.card_id = excluded.card_id"
	return ` ON CONFLICT (tenant_id, agent_id) DO UPDATE SET probed_at = CASE WHEN ` + same + ` THEN card_liveness.probed_at END,
 down_at = CASE WHEN ` + same + ` THEN card_liveness.down_at END, checked_at = CASE WHEN ` + same + ` THEN card_liveness.checked_at END,
 probe_failures = CASE WHEN ` + same + ` THEN card_liveness.probe_failures ELSE 0 END,
 probe_latency_ms = CASE WHEN ` + same + ` THEN card_liveness.probe_latency_ms ELSE 0 END,
 probe_error = CASE WHEN ` + same + ` THEN card_liveness.probe_error ELSE '' END,
 seen_at = excluded.seen_at, updated_at = excluded.updated_at, card_id = excluded.card_id`
}

// SaveBeats writes the heartbeats in one transaction (on SQLite, through the group committer).
func (s *LivenessStore) SaveBeats(ctx context.Context, beats []liveness.Record) error {
	tail := s.beatUpsert()
	err := s.db.transact(ctx, func(tx *gorm.DB) error {
		for start := 0; start < len(beats); start += beatsPerStatement {
			chunk := beats[start:min(len(beats), start+beatsPerStatement)]
			var q strings.Builder
			q.WriteString("INSERT INTO card_liveness (tenant_id, agent_id, card_id, seen_at, updated_at) VALUES ")
			args := make([]any, 0, 5*len(chunk))
			for i, b := range chunk {
				if i > 0 {
					q.WriteString(", ")
				}
				q.WriteString("(?, ?, ?, ?, ?)")
				args = append(args, string(b.Tenant), b.AgentID, b.CardID, utc(b.SeenAt), utc(b.UpdatedAt))
			}
			q.WriteString(tail)
			if err := tx.Exec(q.String(), args...).Error; err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("save heartbeats: %w", err)
	}
	return nil
}

const livenessColumns = `tenant_id, agent_id, card_id, seen_at, probed_at, down_at, checked_at,
 probe_failures, probe_latency_ms, probe_error, updated_at`

// Load reads every record of the tenant.
func (s *LivenessStore) Load(ctx context.Context, tenant tenants.ID) ([]liveness.Record, error) {
	return s.query(ctx, "SELECT "+livenessColumns+" FROM card_liveness WHERE tenant_id = ?", string(tenant))
}

// Since reads the records of every tenant written at or after t.
func (s *LivenessStore) Since(ctx context.Context, t time.Time) ([]liveness.Record, error) {
	return s.query(ctx, "SELECT "+livenessColumns+" FROM card_liveness WHERE updated_at >= ?", utc(t))
}

func (s *LivenessStore) query(ctx context.Context, q string, args ...any) ([]liveness.Record, error) {
	rows, err := s.db.with(ctx).Raw(q, args...).Rows()
	if err != nil {
		return nil, fmt.Errorf("read liveness: %w", err)
	}
	defer rows.Close()
	var out []liveness.Record
	for rows.Next() {
		var r liveness.Record
		var tenant string
		var seen, probed, down, checked sql.NullTime
		if err := rows.Scan(&tenant, &r.AgentID, &r.CardID, &seen, &probed, &down, &checked,
			&r.ProbeFailures, &r.ProbeLatencyMs, &r.ProbeError, &r.UpdatedAt); err != nil {
			return nil, fmt.Errorf("read liveness: %w", err)
		}
		r.Tenant = tenants.ID(tenant)
		r.SeenAt, r.ProbedAt, r.DownAt, r.CheckedAt = nullUTC(seen), nullUTC(probed), nullUTC(down), nullUTC(checked)
		r.UpdatedAt = r.UpdatedAt.UTC()
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read liveness: %w", err)
	}
	return out, nil
}

func nullUTC(t sql.NullTime) time.Time {
	if !t.Valid {
		return time.Time{}
	}
	return t.Time.UTC()
}

// deleteLiveness drops the liveness record of a card being deleted, in its transaction.
func deleteLiveness(tx *gorm.DB, tenant, agentID string) error {
	return tx.Exec("DELETE FROM card_liveness WHERE tenant_id = ? AND agent_id = ?", tenant, agentID).Error
}
