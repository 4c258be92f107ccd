package storage

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/agentcards/agentcards/migrations"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/tenants/audit"
)

// The audit trail (package tenants/audit): every write of this package appends its entry with
// record (or, for a batch, recordAll) on the write's own transaction, so that the write and its
// entry commit together or not at all. Postgres's one-statement card writes carry theirs in the
// statement (pgAudit).

// AuditStore reads the trail, records refusals and prunes it; it implements audit.Store.
type AuditStore struct{ db *DB }

// NewAuditStore returns the trail's store on db.
func NewAuditStore(db *DB) *AuditStore { return &AuditStore{db: db} }

// The bounds of the trail's text columns (migration 13), in characters.
const (
	maxAuditText   = 300
	maxAuditDetail = 1000
	maxAuditAction = 64
	maxRequestID   = 64
)

// insertAudit is the multi-row insert of entries.
var insertAudit = &rowsInsert{table: "audit_entries",
	columns: []string{"tenant_id", "written_at", "principal", "request_id", "action", "object", "detail", "revision_before", "revision_after", "outcome", "attempts"}}

// clipped is e with its text cut to what its columns hold (migration 13).
func clipped(e audit.Entry) audit.Entry {
	e.Principal, e.RequestID = truncateRunes(e.Principal, maxAuditText), truncateRunes(e.RequestID, maxRequestID)
	e.Action, e.Object = truncateRunes(e.Action, maxAuditAction), truncateRunes(e.Object, maxAuditText)
	e.Detail = truncateRunes(e.Detail, maxAuditDetail)
	return e
}

// appendAudit appends e's values, of tenant, written at now, in the columns of insertAudit.
func appendAudit(values []any, tenant string, now time.Time, e audit.Entry) []any {
	e = clipped(e)
	return append(values, tenant, now, e.Principal, e.RequestID, e.Action, e.Object, e.Detail,
		e.RevisionBefore, e.RevisionAfter, e.Outcome, max(e.Attempts, 1))
}

// record appends e to tenant's trail inside tx, the transaction of the write it records.
func (db *DB) record(tx *gorm.DB, tenant string, e audit.Entry) error {
	return db.recordAll(tx, tenant, []audit.Entry{e})
}

// recordAll appends entries to tenant's trail inside tx, in as few statements as insertRows
// takes.
func (db *DB) recordAll(tx *gorm.DB, tenant string, entries []audit.Entry) error {
	now := utc(tx.NowFunc())
	values := make([]any, 0, len(entries)*len(insertAudit.columns))
	for _, e := range entries {
		values = appendAudit(values, tenant, now, e)
	}
	if err := db.insertRows(tx, insertAudit, values, nil); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	return nil
}

// pgAudit is the part of a Postgres card write's one statement that appends its entry: a CTE
// inserting one row for each row of the CTE w (the card written, with its revision), its values
// the parameters pgAuditArgs gives but revision_after, w's revision.
const pgAudit = "a AS (INSERT INTO audit_entries (tenant_id, written_at, principal, request_id, action, object, detail, revision_before, revision_after, outcome, attempts) " +
	"SELECT ?, ?, ?, ?, ?, ?, ?, ?, w.revision, ?, 1 FROM w)"

// pgAuditArgs are pgAudit's parameters for e of tenant, written at now.
func pgAuditArgs(tenant string, now time.Time, e audit.Entry) []any {
	e = clipped(e)
	return []any{tenant, now, e.Principal, e.RequestID, e.Action, e.Object, e.Detail, e.RevisionBefore, e.Outcome}
}

// auditRow is a row of audit_entries.
type auditRow struct {
	Seq            int64     `gorm:"column:seq;primaryKey"`
	TenantID       string    `gorm:"column:tenant_id"`
	WrittenAt      time.Time `gorm:"column:written_at"`
	Principal      string    `gorm:"column:principal"`
	RequestID      string    `gorm:"column:request_id"`
	Action         string    `gorm:"column:action"`
	Object         string    `gorm:"column:object"`
	Detail         string    `gorm:"column:detail"`
	RevisionBefore int64     `gorm:"column:revision_before"`
	RevisionAfter  int64     `gorm:"column:revision_after"`
	Outcome        string    `gorm:"column:outcome"`
	Attempts       int       `gorm:"column:attempts"`
}

func (auditRow) TableName() string { return "audit_entries" }

func (r auditRow) entry() audit.Entry {
	e := audit.Entry{
		Seq: r.Seq, At: r.WrittenAt.UTC(), Principal: r.Principal, RequestID: r.RequestID, Action: r.Action,
		Object: r.Object, Detail: r.Detail, RevisionBefore: r.RevisionBefore, RevisionAfter: r.RevisionAfter, Outcome: r.Outcome,
	}
	if r.Attempts > 1 {
		e.Attempts = r.Attempts
	}
	return e
}

// List returns the tenant's entries that f selects, newest first.
func (s *AuditStore) List(ctx context.Context, tenant tenants.ID, f audit.Filter) ([]audit.Entry, error) {
	q := s.db.with(ctx).Where("tenant_id = ?", string(tenant))
	if f.Principal != "" {
		q = q.Where("principal = ?", f.Principal)
	}
	if f.Action != "" {
		q = q.Where("action = ?", f.Action)
	}
	if f.ObjectPrefix != "" {
		// A range, not LIKE: the prefix is taken as it is (no wildcards to escape), and every
		// dialect walks the (tenant_id, object) index for it.
		q = q.Where("object >= ? AND object < ?", f.ObjectPrefix, f.ObjectPrefix+"\U0010FFFF")
	}
	if !f.Since.IsZero() {
		q = q.Where("written_at >= ?", utc(f.Since))
	}
	if !f.Until.IsZero() {
		q = q.Where("written_at < ?", utc(f.Until))
	}
	if f.Before > 0 {
		q = q.Where("seq < ?", f.Before)
	}
	if f.Limit > 0 {
		q = q.Limit(f.Limit)
	}
	var rows []auditRow
	if err := q.Order("seq DESC").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list audit entries: %w", err)
	}
	out := make([]audit.Entry, len(rows))
	for i, r := range rows {
		out[i] = r.entry()
	}
	return out, nil
}

// refusalWindow is how long after a refusal's entry the same refusal counts into it.
const refusalWindow = time.Hour

// maxRefusedObjects bounds the entries one principal's refusals of one action add in a window:
// past it, refusals of other objects count into the newest of them, so that a caller trying
// made-up ids cannot grow the trail by a row a request.
const maxRefusedObjects = 10

// Refused records e, a write refused by policy, in tenant's trail: as a new entry, or counted
// into the entry of the same refusal (principal, action, object, detail) made within the hour
// before, which keeps its time and request id (those of the first try). A principal refused the
// same action on more than maxRefusedObjects objects within the hour has the rest counted into
// the newest of those entries. Nothing is recorded for a tenant that no longer exists.
func (s *AuditStore) Refused(ctx context.Context, tenant tenants.ID, e audit.Entry) error {
	e = clipped(e)
	e.Outcome = audit.Denied
	return s.db.transact(ctx, func(tx *gorm.DB) error {
		// The tenant row, shared: a tenant delete (which takes it for update before it archives
		// the trail) waits for this entry or goes first, and then nothing is recorded.
		var found []int
		if err := tx.Raw("SELECT 1 FROM tenants WHERE tenant_id = ?"+s.db.shareLock(), string(tenant)).Scan(&found).Error; err != nil {
			return fmt.Errorf("audit a refusal: %w", err)
		}
		if len(found) == 0 {
			return nil
		}
		since := utc(tx.NowFunc()).Add(-refusalWindow)
		recent := func() *gorm.DB {
			return tx.Model(&auditRow{}).Where("tenant_id = ? AND principal = ? AND action = ? AND detail = ? AND outcome = ? AND written_at >= ?",
				string(tenant), e.Principal, e.Action, e.Detail, audit.Denied, since)
		}
		var seq int64
		err := recent().Where("object = ?", e.Object).Select("seq").Order("seq DESC").Limit(1).Scan(&seq).Error
		if err != nil {
			return fmt.Errorf("audit a refusal: %w", err)
		}
		if seq == 0 {
			var seqs []int64
			if err := recent().Select("seq").Order("seq DESC").Limit(maxRefusedObjects).Scan(&seqs).Error; err != nil {
				return fmt.Errorf("audit a refusal: %w", err)
			}
			if len(seqs) < maxRefusedObjects {
				return s.db.record(tx, string(tenant), e)
			}
			seq = seqs[0]
		}
		return tx.Model(&auditRow{}).Where("seq = ?", seq).Update("attempts", gorm.Expr("attempts + 1")).Error
	})
}

// shareLock is the clause that takes the rows a SELECT reads in share mode, against a
// concurrent delete (none on SQLite, whose one writer serialises the writes).
func (db *DB) shareLock() string {
	switch db.dialect {
	case migrations.Postgres:
		return " FOR KEY SHARE"
	case migrations.MySQL:
		return " LOCK IN SHARE MODE"
	}
	return ""
}

// pruneBatch bounds the rows one statement of Prune deletes, so that a first prune of a long
// trail holds no lock for long.
var pruneBatch = 5000

// Prune deletes the entries written before before, of every tenant, and reports how many.
func (s *AuditStore) Prune(ctx context.Context, before time.Time) (int64, error) {
	var total int64
	for {
		var res sql.Result
		var err error
		switch s.db.dialect {
		case migrations.MySQL:
			res, err = s.db.wsql.ExecContext(ctx, "DELETE FROM audit_entries WHERE written_at < ? ORDER BY written_at LIMIT ?", utc(before), pruneBatch)
		default:
			res, err = s.db.wsql.ExecContext(ctx, rebind(s.db.dialect,
				"DELETE FROM audit_entries WHERE seq IN (SELECT seq FROM audit_entries WHERE written_at < ? ORDER BY written_at LIMIT ?)"), utc(before), pruneBatch)
		}
		if err != nil {
			return total, fmt.Errorf("prune the audit trail: %w", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return total, fmt.Errorf("prune the audit trail: %w", err)
		}
		total += n
		if n < int64(pruneBatch) {
			return total, nil
		}
	}
}

// archiveTrail moves tenant's trail, inside the transaction that deletes the tenant, to the key
// it returns: the id, a '/' (which no tenant id has) and the deletion time in Unix
// microseconds. It stays there until audit.retention, out of reach of a tenant created again
// under the id.
func archiveTrail(tx *gorm.DB, tenant string) (string, error) {
	key := fmt.Sprintf("%s/%d", tenant, utc(tx.NowFunc()).UnixMicro())
	return key, tx.Model(&auditRow{}).Where("tenant_id = ?", tenant).Update("tenant_id", key).Error
}
