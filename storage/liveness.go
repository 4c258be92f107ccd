package storage

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/agentcards/agentcards/cards/liveness"
	"github.com/agentcards/agentcards/migrations"
	"github.com/agentcards/agentcards/tenants"
)

// LivenessStore keeps the liveness records of cards (card_liveness), and the log of their
// writes that other replicas read them back by (card_liveness_writes, see liveness_writes.go).
type LivenessStore struct {
	db *DB
	// prunedAt is when this store last deleted the log's old entries (Unix nanoseconds).
	prunedAt atomic.Int64
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
	// In key order, as claims and probe results lock rows, and again after a deadlock.
	beats = slices.Clone(beats)
	slices.SortFunc(beats, func(a, b liveness.Record) int { return byKey(a.Tenant, a.AgentID, b.Tenant, b.AgentID) })
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
		ws := make([]written, len(beats))
		for i, b := range beats {
			ws[i] = written{string(b.Tenant), b.AgentID, b.UpdatedAt}
		}
		return logWrites(tx, ws)
	})
	if err != nil {
		return fmt.Errorf("save heartbeats: %w", err)
	}
	s.pruneWrites(ctx)
	return nil
}

const livenessColumns = `tenant_id, agent_id, card_id, seen_at, probed_at, down_at, checked_at,
 probe_failures, probe_latency_ms, probe_error, updated_at`

// Load reads every record of the tenant.
func (s *LivenessStore) Load(ctx context.Context, tenant tenants.ID) ([]liveness.Record, error) {
	return s.query(ctx, "SELECT "+livenessColumns+" FROM card_liveness WHERE tenant_id = ?", string(tenant))
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

var _ liveness.ProbeStore = (*LivenessStore)(nil)

// Candidates lists the cards of every active tenant, with their revisions.
func (s *LivenessStore) Candidates(ctx context.Context) ([]liveness.Candidate, error) {
	rows, err := s.db.with(ctx).Raw(`SELECT c.tenant_id, c.agent_id, c.id, c.revision FROM cards c
 JOIN tenants t ON t.tenant_id = c.tenant_id WHERE t.status = 'active'`).Rows()
	if err != nil {
		return nil, fmt.Errorf("probe candidates: %w", err)
	}
	defer rows.Close()
	var out []liveness.Candidate
	for rows.Next() {
		var c liveness.Candidate
		var tenant string
		if err := rows.Scan(&tenant, &c.AgentID, &c.CardID, &c.Revision); err != nil {
			return nil, fmt.Errorf("probe candidates: %w", err)
		}
		c.Tenant = tenants.ID(tenant)
		out = append(out, c)
	}
	return out, rows.Err()
}

// insertIgnore is the head of an insert that skips rows whose key exists.
func (s *LivenessStore) insertIgnore(columns string) string {
	switch s.db.dialect {
	case migrations.MySQL:
		return "INSERT IGNORE INTO card_liveness (" + columns + ") VALUES "
	case migrations.SQLite:
		return "INSERT OR IGNORE INTO card_liveness (" + columns + ") VALUES "
	}
	return "INSERT INTO card_liveness (" + columns + ") VALUES "
}

// Claim leases the next probe of the tenant's cards cs (in agentId order, so that replicas
// claiming at once lock rows in the same order) to owner until until, where the lease of now
// has run out, and returns the agents it got. Cards without a row get one first.
func (s *LivenessStore) Claim(ctx context.Context, owner string, tenant tenants.ID, cs []liveness.Candidate, now, until time.Time) ([]string, error) {
	return s.claim(ctx, "probe", owner, tenant, cs, now, until)
}

// ClaimRefresh is Claim for the next scheduled refresh of the cards from their source.
func (s *LivenessStore) ClaimRefresh(ctx context.Context, owner string, tenant tenants.ID, cs []liveness.Candidate, now, until time.Time) ([]string, error) {
	return s.claim(ctx, "refresh", owner, tenant, cs, now, until)
}

// claim leases what of the cards, kind's columns say (probe_owner and probe_until, or
// refresh_owner and refresh_until).
func (s *LivenessStore) claim(ctx context.Context, kind, owner string, tenant tenants.ID, cs []liveness.Candidate, now, until time.Time) ([]string, error) {
	if len(cs) == 0 {
		return nil, nil
	}
	ownerCol, untilCol := kind+"_owner", kind+"_until"
	var got []string
	// Replicas claiming the same rows at once can deadlock: the loser's transaction runs again
	// (see DB.commit), and then finds the rows claimed.
	err := s.claimOnce(ctx, ownerCol, untilCol, owner, tenant, cs, now, until, &got)
	if err != nil {
		return nil, fmt.Errorf("claim %ss of tenant %q: %w", kind, tenant, err)
	}
	return got, nil
}

// byKey orders rows by their key (tenant, agent), the order claims lock them in.
func byKey(ta tenants.ID, a string, tb tenants.ID, b string) int {
	return cmp.Or(strings.Compare(string(ta), string(tb)), strings.Compare(a, b))
}

func (s *LivenessStore) claimOnce(ctx context.Context, ownerCol, untilCol, owner string, tenant tenants.ID, cs []liveness.Candidate, now, until time.Time, out *[]string) error {
	var got []string
	err := s.db.transact(ctx, func(tx *gorm.DB) error {
		got = got[:0]
		var q strings.Builder
		q.WriteString(s.insertIgnore("tenant_id, agent_id, card_id, updated_at"))
		ids := make([]string, len(cs))
		args := make([]any, 0, 4*len(cs))
		for i, c := range cs {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString("(?, ?, ?, ?)")
			args = append(args, string(tenant), c.AgentID, c.CardID, utc(now))
			ids[i] = c.AgentID
		}
		if s.db.dialect == migrations.Postgres {
			q.WriteString(" ON CONFLICT (tenant_id, agent_id) DO NOTHING")
		}
		if err := tx.Exec(q.String(), args...).Error; err != nil {
			return err
		}
		if err := tx.Exec("UPDATE card_liveness SET "+ownerCol+" = ?, "+untilCol+" = ?"+
			" WHERE tenant_id = ? AND agent_id IN ? AND ("+untilCol+" IS NULL OR "+untilCol+" <= ?)",
			owner, utc(until), string(tenant), ids, utc(now)).Error; err != nil {
			return err
		}
		return tx.Raw("SELECT agent_id FROM card_liveness WHERE tenant_id = ? AND agent_id IN ? AND "+ownerCol+" = ?",
			string(tenant), ids, owner).Scan(&got).Error
	})
	*out = got
	return err
}

// probeUpsert is the tail of the probe insert per dialect: a row of another card starts afresh
// (the heartbeat and earlier probes were that card's; the insert itself is of a card that
// exists, so a result of a card deleted meanwhile writes nothing); a failure counts one more in
// a row and marks the card down when the count reaches failures (the last parameter), once per
// run; a success clears the count. The MySQL form assigns down_at before probe_failures, and
// card_id last, as each assignment there sees the ones before.
func (s *LivenessStore) probeUpsert() string {
	if s.db.dialect == migrations.MySQL {
		same := "card_id = VALUES(card_id)"
		return ` ON DUPLICATE KEY UPDATE seen_at = IF(` + same + `, seen_at, NULL),
 probed_at = IF(VALUES(probed_at) IS NOT NULL, VALUES(probed_at), IF(` + same + `, probed_at, NULL)),
 down_at = IF(NOT (` + same + `), VALUES(down_at), IF(VALUES(probe_failures) = 0, down_at, IF(probe_failures + 1 = ?, VALUES(checked_at), down_at))),
 probe_failures = IF(VALUES(probe_failures) = 0, 0, IF(` + same + `, probe_failures + 1, 1)),
 checked_at = VALUES(checked_at), probe_latency_ms = VALUES(probe_latency_ms), probe_error = VALUES(probe_error),
 updated_at = VALUES(updated_at), card_id = VALUES(card_id)`
	}
	same := "card_liveness.card_id = excluded.card_id"
	return ` ON CONFLICT (tenant_id, agent_id) DO UPDATE SET seen_at = CASE WHEN ` + same + ` THEN card_liveness.seen_at END,
 probed_at = CASE WHEN excluded.probed_at IS NOT NULL THEN excluded.probed_at WHEN ` + same + ` THEN card_liveness.probed_at END,
 down_at = CASE WHEN NOT (` + same + `) THEN excluded.down_at WHEN excluded.probe_failures = 0 THEN card_liveness.down_at
   WHEN card_liveness.probe_failures + 1 = ? THEN excluded.checked_at ELSE card_liveness.down_at END,
 probe_failures = CASE WHEN excluded.probe_failures = 0 THEN 0 WHEN ` + same + ` THEN card_liveness.probe_failures + 1 ELSE 1 END,
 checked_at = excluded.checked_at, probe_latency_ms = excluded.probe_latency_ms, probe_error = excluded.probe_error,
 updated_at = excluded.updated_at, card_id = excluded.card_id`
}

// SaveProbes records the outcomes of probes of cards that still exist in one transaction,
// stamped as written at (other replicas read rows by that time), and returns the records as
// stored.
func (s *LivenessStore) SaveProbes(ctx context.Context, results []liveness.ProbeResult, failures int, at time.Time) ([]liveness.Record, error) {
	if len(results) == 0 {
		return nil, nil
	}
	// INSERT ... SELECT of a card that exists: a probe of a card deleted meanwhile (or replaced
	// by another of the same agent) writes nothing. SQLite needs the WHERE to read the ON
	// CONFLICT that follows as the upsert's.
	stmt := "INSERT INTO card_liveness (tenant_id, agent_id, card_id, checked_at, probed_at, down_at, probe_failures, probe_latency_ms, probe_error, updated_at) " +
		"SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ? FROM cards WHERE tenant_id = ? AND agent_id = ? AND id = ?" + s.probeUpsert()
	byTenant := map[tenants.ID][]string{}
	// In key order, as claims lock them, and again after a deadlock with another replica's claim.
	results = slices.Clone(results)
	slices.SortFunc(results, func(a, b liveness.ProbeResult) int { return byKey(a.Tenant, a.AgentID, b.Tenant, b.AgentID) })
	stamp := utc(at)
	err := s.db.transact(ctx, func(tx *gorm.DB) error {
		for _, r := range results {
			checked := utc(r.At)
			var probed, down any
			fails := 0
			if r.OK {
				probed = checked
			} else {
				fails = 1
				if failures <= 1 {
					down = checked
				}
			}
			if err := tx.Exec(stmt, string(r.Tenant), r.AgentID, r.CardID, checked, probed, down, fails, r.LatencyMs,
				truncateRunes(r.Error, 300), stamp, string(r.Tenant), r.AgentID, r.CardID, failures).Error; err != nil {
				return err
			}
		}
		ws := make([]written, len(results))
		for i, r := range results {
			ws[i] = written{string(r.Tenant), r.AgentID, stamp}
		}
		return logWrites(tx, ws)
	})
	if err != nil {
		return nil, fmt.Errorf("save probes: %w", err)
	}
	s.pruneWrites(ctx)
	for _, r := range results {
		byTenant[r.Tenant] = append(byTenant[r.Tenant], r.AgentID)
	}
	var out []liveness.Record
	for tenant, ids := range byTenant {
		recs, err := s.query(ctx, "SELECT "+livenessColumns+" FROM card_liveness WHERE tenant_id = ? AND agent_id IN ?", string(tenant), ids)
		if err != nil {
			return nil, err
		}
		out = append(out, recs...)
	}
	return out, nil
}

// truncateRunes cuts s to at most n characters.
func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}

// Prune deletes the records of cards that no longer exist (a heartbeat or probe result written
// as its card was deleted) and reports how many.
func (s *LivenessStore) Prune(ctx context.Context) (int64, error) {
	res := s.db.writing(ctx).Exec(`DELETE FROM card_liveness WHERE NOT EXISTS (SELECT 1 FROM cards c
 WHERE c.tenant_id = card_liveness.tenant_id AND c.agent_id = card_liveness.agent_id AND c.id = card_liveness.card_id)`)
	if res.Error != nil {
		return 0, fmt.Errorf("prune liveness: %w", res.Error)
	}
	return res.RowsAffected, nil
}
