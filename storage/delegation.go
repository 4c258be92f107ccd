package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/bits"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/delegation"
	"github.com/agentcards/agentcards/migrations"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/tenants/audit"
	"github.com/agentcards/agentcards/tenants/paging"
)

// DelegationStore keeps delegation records.
type DelegationStore struct {
	db *DB
}

var _ delegation.Store = (*DelegationStore)(nil)

// NewDelegationStore returns the delegation store over db.
func NewDelegationStore(db *DB) *DelegationStore { return &DelegationStore{db: db} }

// delegationRow is a row of the delegations table. result holds the JSON result as text (” for
// none): MySQL allows no default on TEXT columns, so every insert writes both text columns.
type delegationRow struct {
	TenantID      string    `gorm:"column:tenant_id;primaryKey"`
	ID            string    `gorm:"column:id;primaryKey"`
	Caller        string    `gorm:"column:caller"`
	AgentID       string    `gorm:"column:agent_id"`
	Capability    string    `gorm:"column:capability"`
	Mode          string    `gorm:"column:mode"`
	Transport     string    `gorm:"column:transport"`
	A2ABinding    string    `gorm:"column:a2a_binding"`
	A2AVersion    string    `gorm:"column:a2a_version"`
	AgentLiveness string    `gorm:"column:agent_liveness"`
	Attempts      int       `gorm:"column:attempts"`
	Depth         int       `gorm:"column:depth"`
	Status        string    `gorm:"column:status"`
	CallbackHash  string    `gorm:"column:callback_hash"`
	Result        string    `gorm:"column:result"`
	Error         string    `gorm:"column:error"`
	LatencyMS     int64     `gorm:"column:latency_ms"`
	CreatedAt     time.Time `gorm:"column:created_at;autoCreateTime:false"`
	UpdatedAt     time.Time `gorm:"column:updated_at;autoUpdateTime:false"`
	// Deadline is NULL for records that never waited (refused) or predate the column.
	Deadline *time.Time `gorm:"column:deadline"`
	// Task is the task as recorded ('' when none was kept), cut if TaskTruncated.
	Task          string `gorm:"column:task"`
	TaskTruncated bool   `gorm:"column:task_truncated"`
	// Imported names the registry an imported record came from; '' for the service's own.
	Imported string `gorm:"column:imported"`
}

func (delegationRow) TableName() string { return "delegations" }

func newDelegationRow(tenant tenants.ID, d delegation.Delegation, hash string) delegationRow {
	row := delegationRow{
		TenantID: string(tenant), ID: d.ID, Caller: d.Caller, AgentID: d.AgentID, Capability: d.Capability,
		Mode: string(d.Mode), Transport: d.Transport, A2ABinding: d.A2A.Binding, A2AVersion: d.A2A.Version,
		AgentLiveness: string(d.AgentLiveness),
		Depth:         d.Depth, Status: string(d.Status),
		CallbackHash: hash, Result: string(d.Result), Error: d.Error, LatencyMS: d.LatencyMS,
		CreatedAt: utc(d.CreatedAt), UpdatedAt: utc(d.UpdatedAt), Task: d.Task, TaskTruncated: d.TaskTruncated,
		Imported: d.Imported,
	}
	if !d.Deadline.IsZero() {
		at := utc(d.Deadline)
		row.Deadline = &at
	}
	return row
}

func (r delegationRow) delegation() delegation.Delegation {
	d := delegation.Delegation{
		ID: r.ID, Caller: r.Caller, AgentID: r.AgentID, Capability: r.Capability, Mode: delegation.Mode(r.Mode),
		Transport: r.Transport, A2A: delegation.Interface{Binding: r.A2ABinding, Version: r.A2AVersion},
		Depth: r.Depth, Status: delegation.Status(r.Status), Error: r.Error,
		LatencyMS: r.LatencyMS, CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
		AgentLiveness: cards.LivenessState(r.AgentLiveness), Task: r.Task, TaskTruncated: r.TaskTruncated,
		Imported: r.Imported,
	}
	if r.Attempts > 1 {
		d.Attempts = r.Attempts
	}
	if r.Result != "" {
		d.Result = []byte(r.Result)
	}
	if r.Deadline != nil {
		d.Deadline = r.Deadline.UTC()
	}
	return d
}

// Create inserts a record; an id the tenant already has is refused with an error wrapping
// gorm.ErrDuplicatedKey (see translate).
func (s *DelegationStore) Create(ctx context.Context, tenant tenants.ID, d delegation.Delegation, callbackHash string) error {
	r := newDelegationRow(tenant, d, callbackHash)
	entry := audit.New(ctx, "delegations.create", audit.DelegationObject(d.ID), 0, 0)
	entry.Outcome, entry.Detail = r.Status, "agent "+r.AgentID+" capability "+r.Capability
	const insertRecord = "INSERT INTO delegations (tenant_id, id, caller, agent_id, capability, mode, transport, a2a_binding, a2a_version, " +
		"depth, status, callback_hash, result, error, latency_ms, created_at, updated_at, deadline, agent_liveness, task, task_truncated) " +
		"VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
	args := []any{r.TenantID, r.ID, r.Caller, r.AgentID, r.Capability, r.Mode, r.Transport, r.A2ABinding, r.A2AVersion, r.Depth, r.Status,
		r.CallbackHash, r.Result, r.Error, r.LatencyMS, r.CreatedAt, r.UpdatedAt, r.Deadline, r.AgentLiveness, r.Task, r.TaskTruncated}
	var err error
	if s.db.dialect == migrations.Postgres {
		// One statement in autocommit, the record and its audit entry, as a card create.
		now := utc(s.db.writer.NowFunc())
		q := s.db.prepare("WITH w AS (" + insertRecord + " RETURNING 0 AS revision), " + pgAudit + " SELECT 1")
		err = s.db.grouped(ctx, func(tx *gorm.DB) error {
			_, err := q.exec(tx, append(args, pgAuditArgs(r.TenantID, now, entry)...)...)
			return err
		})
	} else {
		insert := s.db.prepare(insertRecord)
		err = s.db.transact(ctx, func(tx *gorm.DB) error {
			if _, err := insert.exec(tx, args...); err != nil {
				return err
			}
			return s.db.record(tx, r.TenantID, entry)
		})
	}
	if err != nil {
		return fmt.Errorf("create delegation %q: %w", d.ID, err)
	}
	return nil
}

func (s *DelegationStore) row(ctx context.Context, tenant tenants.ID, id string) (delegationRow, error) {
	var row delegationRow
	err := s.db.with(ctx).Where("tenant_id = ? AND id = ?", string(tenant), id).Take(&row).Error
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return row, fault.Errorf(fault.NotFound, "delegation %q: not found", id)
	case err != nil:
		return row, fmt.Errorf("get delegation %q: %w", id, err)
	}
	return row, nil
}

// Get returns one record; delegation.ErrNotFound if the tenant has none with id.
func (s *DelegationStore) Get(ctx context.Context, tenant tenants.ID, id string) (delegation.Delegation, error) {
	row, err := s.row(ctx, tenant, id)
	if err != nil {
		return delegation.Delegation{}, err
	}
	return row.delegation(), nil
}

// CallbackHash returns the hash of the record's callback token.
func (s *DelegationStore) CallbackHash(ctx context.Context, tenant tenants.ID, id string) (string, error) {
	row, err := s.row(ctx, tenant, id)
	if err != nil {
		return "", err
	}
	return row.CallbackHash, nil
}

// Update applies o if the record's status is still one of from; the status check and the write
// are one statement, so two concurrent results cannot both win.
func (s *DelegationStore) Update(ctx context.Context, tenant tenants.ID, id string, from []delegation.Status, o delegation.Outcome) error {
	if len(from) == 0 {
		return fmt.Errorf("update delegation %q: no status to move from", id)
	}
	states := make([]string, len(from))
	for i, st := range from {
		states[i] = string(st)
	}
	query, args := "UPDATE delegations SET status = ?, updated_at = ?", []any{string(o.Status), utc(o.At)}
	if o.Status.Terminal() || o.Status == delegation.StatusAccepted {
		query += ", result = ?, error = ?, latency_ms = ?"
		args = append(args, string(o.Result), o.Error, o.LatencyMS)
	}
	query += " WHERE tenant_id = ? AND id = ? AND status IN (?" + strings.Repeat(", ?", len(states)-1) + ")"
	args = append(args, string(tenant), id)
	for _, st := range states {
		args = append(args, st)
	}
	entry := audit.New(ctx, "delegations.update", audit.DelegationObject(id), 0, 0)
	entry.Outcome = string(o.Status)
	var affected int64
	var err error
	if s.db.dialect == migrations.Postgres {
		// One statement in autocommit: the update and, for the row it updated, the audit entry;
		// the rows it affects are the entries'.
		now := utc(s.db.writer.NowFunc())
		update := s.db.prepare("WITH w AS (" + query + " RETURNING 0 AS revision), " + pgAudit + " SELECT 1 FROM w")
		err = s.db.grouped(ctx, func(tx *gorm.DB) error {
			rows := 0
			err := update.each(tx, func(*sql.Rows) error { rows++; return nil }, append(args, pgAuditArgs(string(tenant), now, entry)...)...)
			affected = int64(rows)
			return err
		})
	} else {
		update := s.db.prepare(query) // a handful of variants: with or without the outcome, 1-3 states
		err = s.db.transact(ctx, func(tx *gorm.DB) error {
			res, err := update.exec(tx, args...)
			if err != nil {
				return err
			}
			if affected, err = res.RowsAffected(); err != nil || affected == 0 {
				return err
			}
			return s.db.record(tx, string(tenant), entry)
		})
	}
	if err != nil {
		return fmt.Errorf("update delegation %q: %w", id, err)
	}
	if affected > 0 {
		return nil
	}
	row, err := s.row(ctx, tenant, id)
	if err != nil {
		return err
	}
	return fault.Errorf(fault.Conflict, "delegation %q is %s: delegation already finished", id, row.Status)
}

// RepeatRejected counts d, a refusal, into the caller's newest record when that one is the same
// refusal (rejected, same agent, capability, mode, transport, depth and reason) last tried at or after
// since: it bumps its attempts and time and returns it, true. Otherwise it changes nothing and
// reports false, and the caller creates a record.
func (s *DelegationStore) RepeatRejected(ctx context.Context, tenant tenants.ID, d delegation.Delegation, since time.Time) (delegation.Delegation, bool, error) {
	var out delegation.Delegation
	found := false
	err := s.db.transact(ctx, func(tx *gorm.DB) error {
		var rows []delegationRow
		if err := tx.Where("tenant_id = ? AND caller = ?", string(tenant), d.Caller).Order("created_at DESC, id DESC").Limit(1).Find(&rows).Error; err != nil {
			return err
		}
		if len(rows) == 0 {
			return nil
		}
		r := rows[0]
		if r.Status != string(delegation.StatusRejected) || r.AgentID != d.AgentID || r.Capability != d.Capability ||
			r.Mode != string(d.Mode) || r.Transport != d.Transport || r.Depth != d.Depth || r.Error != d.Error ||
			r.UpdatedAt.Before(utc(since)) {
			return nil
		}
		res := tx.Model(&delegationRow{}).Where("tenant_id = ? AND id = ? AND status = ?", string(tenant), r.ID, string(delegation.StatusRejected)).
			Updates(map[string]any{"attempts": gorm.Expr("attempts + 1"), "updated_at": utc(d.UpdatedAt)})
		if res.Error != nil {
			return res.Error
		}
		// Its audit entry counts the try too, as a refusal's does (see AuditStore.Refused).
		if err := countAttempt(tx, string(tenant), audit.DelegationObject(r.ID)); err != nil {
			return err
		}
		r.Attempts++
		r.UpdatedAt = utc(d.UpdatedAt)
		out, found = r.delegation(), true
		return nil
	})
	if err != nil {
		return delegation.Delegation{}, false, fmt.Errorf("repeat a rejected delegation: %w", err)
	}
	return out, found, nil
}

// List returns the records f selects, newest first: by created_at, then by id, which the
// indexes of migration 19 hold in that order (an imported record keeps an id of its own registry,
// which says nothing of when it was made). A page starts after the record f.Before, whose
// creation time is read first.
func (s *DelegationStore) List(ctx context.Context, tenant tenants.ID, f delegation.Filter) ([]delegation.Delegation, error) {
	q := s.db.with(ctx).Where("tenant_id = ?", string(tenant))
	if f.Caller != "" {
		q = q.Where("caller = ?", f.Caller)
	}
	if f.Status != "" {
		q = q.Where("status = ?", string(f.Status))
	}
	if f.AgentID != "" {
		q = q.Where("agent_id = ?", f.AgentID)
	}
	if f.Before != "" {
		var before []time.Time
		err := s.db.with(ctx).Model(&delegationRow{}).Where("tenant_id = ? AND id = ?", string(tenant), f.Before).Pluck("created_at", &before).Error
		if err != nil {
			return nil, fmt.Errorf("list delegations: the cursor's record: %w", err)
		}
		if len(before) == 0 {
			return nil, paging.ErrCursor
		}
		// The first condition bounds the index range; the second leaves out the records of the
		// same time from the cursor's on.
		at := utc(before[0])
		q = q.Where("created_at <= ? AND (created_at < ? OR id < ?)", at, at, f.Before)
	}
	if f.Limit > 0 {
		q = q.Limit(f.Limit)
	}
	var rows []delegationRow
	if err := q.Order("created_at DESC, id DESC").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list delegations: %w", err)
	}
	out := make([]delegation.Delegation, len(rows))
	for i, r := range rows {
		out[i] = r.delegation()
	}
	return out, nil
}

// countAttempt counts one more try into the newest audit entry of object (whose time stays the
// first try's, as a refusal's does).
func countAttempt(tx *gorm.DB, tenant, object string) error {
	var seq int64
	err := tx.Model(&auditRow{}).Select("seq").Where("tenant_id = ? AND object = ?", tenant, object).
		Order("seq DESC").Limit(1).Scan(&seq).Error
	if err != nil || seq == 0 {
		return err
	}
	return tx.Model(&auditRow{}).Where("seq = ?", seq).Update("attempts", gorm.Expr("attempts + 1")).Error
}

// insertDelegations is the multi-row insert of Import, in the columns of delegationRow.
var insertDelegations = &rowsInsert{table: "delegations", columns: []string{"tenant_id", "id", "caller", "agent_id", "capability",
	"mode", "transport", "a2a_binding", "a2a_version", "depth", "status", "callback_hash", "result", "error", "latency_ms",
	"created_at", "updated_at", "deadline", "agent_liveness", "attempts", "task", "task_truncated", "imported"}}

// appendValues appends the row's values in the columns of insertDelegations.
func (r delegationRow) appendValues(values []any) []any {
	var deadline any
	if r.Deadline != nil {
		deadline = *r.Deadline
	}
	return append(values, r.TenantID, r.ID, r.Caller, r.AgentID, r.Capability, r.Mode, r.Transport, r.A2ABinding, r.A2AVersion,
		r.Depth, r.Status, r.CallbackHash, r.Result, r.Error, r.LatencyMS, r.CreatedAt, r.UpdatedAt, deadline, r.AgentLiveness,
		max(r.Attempts, 1), r.Task, r.TaskTruncated, r.Imported)
}

// Import inserts the records of ds that tenant does not hold yet, in one transaction with an
// audit entry each (delegations.import, outcome the record's status), and returns the ids it
// held already. A concurrent import of the same ids (Postgres and MySQL take writes at once)
// makes one of them fail on the key; it runs again once, and then finds those records there.
func (s *DelegationStore) Import(ctx context.Context, tenant tenants.ID, ds []delegation.Delegation) ([]string, error) {
	var existing []string
	var err error
	for range 2 {
		existing, err = s.importOnce(ctx, tenant, ds)
		if !errors.Is(err, gorm.ErrDuplicatedKey) {
			break
		}
	}
	switch {
	case errors.Is(err, gorm.ErrForeignKeyViolated):
		return nil, fault.Errorf(fault.NotFound, "tenant %q: not found", string(tenant))
	case errors.Is(err, gorm.ErrDuplicatedKey):
		// Written meanwhile twice over by other imports of overlapping records.
		return nil, fault.New(fault.Conflict, "records of the import were written meanwhile by another; send it again: conflict")
	case err != nil:
		return nil, fmt.Errorf("import %d delegations: %w", len(ds), err)
	}
	return existing, nil
}

func (s *DelegationStore) importOnce(ctx context.Context, tenant tenants.ID, ds []delegation.Delegation) ([]string, error) {
	ids := make([]string, len(ds))
	for i, d := range ds {
		ids[i] = d.ID
	}
	var existing []string
	err := s.db.transact(ctx, func(tx *gorm.DB) error {
		held, err := s.db.heldDelegations(tx, string(tenant), ids)
		if err != nil {
			return err
		}
		existing = existing[:0]
		values := make([]any, 0, len(ds)*len(insertDelegations.columns))
		var sizes []int
		entries := make([]audit.Entry, 0, len(ds))
		for _, d := range ds {
			if held[d.ID] {
				existing = append(existing, d.ID)
				continue
			}
			r := newDelegationRow(tenant, d, "")
			values = r.appendValues(values)
			sizes = append(sizes, len(r.Result)+len(r.Task)+len(r.Error))
			e := audit.New(ctx, "delegations.import", audit.DelegationObject(d.ID), 0, 0)
			e.Outcome, e.Detail = r.Status, "agent "+r.AgentID+", imported from "+r.Imported
			entries = append(entries, e)
		}
		if len(entries) == 0 {
			return nil
		}
		if err := s.db.insertRows(tx, insertDelegations, values, func(i int) int { return sizes[i] }); err != nil {
			return err
		}
		return s.db.recordAll(tx, string(tenant), entries)
	})
	return existing, err
}

// heldDelegations returns which of ids tenant holds a record of, read on tx. On Postgres each id
// is looked up by the key on its own, as cardsByAgent does for cards and for the same reason; on
// SQLite and MySQL a list, padded to a power of two so that a few prepared statements serve every
// size.
func (db *DB) heldDelegations(tx *gorm.DB, tenant string, ids []string) (map[string]bool, error) {
	held := map[string]bool{}
	scan := func(rs *sql.Rows) error {
		var id string
		if err := rs.Scan(&id); err != nil {
			return err
		}
		held[id] = true
		return nil
	}
	for len(ids) > 0 {
		part := ids[:min(len(ids), maxLookup)]
		ids = ids[len(part):]
		var query string
		var args []any
		if db.dialect == migrations.Postgres {
			query = "SELECT d.id FROM unnest(?::text[]) AS k(id) CROSS JOIN LATERAL " +
				"(SELECT id FROM delegations WHERE tenant_id = ? AND id = k.id) d"
			args = []any{part, tenant}
		} else {
			size := 1 << bits.Len(uint(len(part)-1))
			args = make([]any, 0, size+1)
			args = append(args, tenant)
			for i := range size {
				args = append(args, part[min(i, len(part)-1)])
			}
			query = "SELECT id FROM delegations WHERE tenant_id = ? AND id IN (?" + strings.Repeat(", ?", size-1) + ")"
		}
		if err := db.prepare(query).each(tx, scan, args...); err != nil {
			return nil, fmt.Errorf("look up the import's records: %w", err)
		}
	}
	return held, nil
}
