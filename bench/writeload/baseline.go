package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
)

// baseline writes with plain database/sql, no GORM and no HTTP, exactly the rows the server
// writes for each operation (storage/card.go, storage/change.go, storage/audit.go; the columns
// are the migrations'): a registration inserts the card, its change-feed entry and its audit
// entry in one transaction, a patch updates the card (conditionally on its revision, as the
// server does) and inserts its two entries in one transaction. On Postgres each write then sends a pg_notify once committed, as the
// server's does, to a channel of its own so that the server does not wake for the baseline's writes.
type baseline struct {
	db      *sql.DB
	dialect string

	insertTenant, insertCard, updateCard, touchCard, insertChange, insertAudit, notify string
}

// The audit entry's principal and request id, as long as the server's for the bench's token
// (subject "bench") and its request ids (24 hexadecimal digits).
const (
	auditPrincipal = "bench"
	requestIDChars = 24
)

// notifyChannel is the baseline's own channel; a notification costs the sender the same whether
// anyone listens or not (it is queued at commit either way).
const notifyChannel = "writeload_baseline"

func newBaseline(db *sql.DB, dialect string) *baseline {
	q := func(s string) string { return rebind(dialect, s) }
	return &baseline{
		db: db, dialect: dialect,
		insertTenant: q("INSERT INTO tenants (tenant_id, name, status, created_at, updated_at) VALUES (?, ?, 'active', ?, ?)"),
		insertCard:   q("INSERT INTO cards (tenant_id, agent_id, id, name, revision, doc, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"),
		updateCard: q("UPDATE cards SET id = ?, name = ?, revision = ?, doc = ?, created_at = ?, updated_at = ? " +
			"WHERE tenant_id = ? AND agent_id = ? AND revision = ?"),
		touchCard:    q("UPDATE cards SET name = ?, doc = ?, revision = revision + 1, updated_at = ? WHERE tenant_id = ? AND agent_id = ?"),
		insertChange: q("INSERT INTO card_changes (tenant_id, agent_id, op, revision, changed_at) VALUES (?, ?, ?, ?, ?)"),
		insertAudit: q("INSERT INTO audit_entries (tenant_id, written_at, principal, request_id, action, object, detail, revision_before, revision_after, outcome, attempts) " +
			"VALUES (?, ?, ?, ?, ?, ?, '', ?, ?, 'ok', 1)"),
		notify: "SELECT set_config('synchronous_commit', 'off', true), pg_notify($1, current_schema() || ' ' || $2)",
	}
}

// now is the time as the server stores it: UTC, microseconds.
func now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// createTenant inserts the tenant row the baseline's cards refer to (the foreign key holds), and
// seeds it with cards, each with its feed entry, in one transaction.
func (b *baseline) createTenant(ctx context.Context, tenant string, seed []card) error {
	t := now()
	return b.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, b.insertTenant, tenant, tenant, t, t); err != nil {
			return err
		}
		for _, c := range seed {
			if _, err := tx.ExecContext(ctx, b.insertCard, tenant, c.agentID, uuid.NewString(), c.name, 1, string(c.doc), t, t); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, b.insertChange, tenant, c.agentID, "create", 1, t); err != nil {
				return err
			}
		}
		return nil
	})
}

// dropTenant removes what createTenant and the writers left.
func (b *baseline) dropTenant(ctx context.Context, tenant string) error {
	return b.tx(ctx, func(tx *sql.Tx) error {
		for _, table := range []string{"audit_entries", "card_changes", "cards", "tenants"} {
			if _, err := tx.ExecContext(ctx, rebind(b.dialect, "DELETE FROM "+table+" WHERE tenant_id = ?"), tenant); err != nil {
				return err
			}
		}
		return nil
	})
}

// register writes a new card at revision 1: what a registration writes.
func (b *baseline) register(ctx context.Context, tenant string, c card, id string, t time.Time) error {
	return b.write(ctx, tenant, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, b.insertCard, tenant, c.agentID, id, c.name, 1, string(c.doc), t, t); err != nil {
			return err
		}
		if err := b.audit(ctx, tx, tenant, "cards.register", c.agentID, 0, 1, t); err != nil {
			return err
		}
		return b.change(ctx, tx, tenant, c.agentID, "create", 1, t)
	})
}

// update rewrites the card at revision prev to prev+1: what a patch writes.
func (b *baseline) update(ctx context.Context, tenant string, c card, id string, created time.Time, prev int64) error {
	t := now()
	return b.write(ctx, tenant, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, b.updateCard, id, c.name, prev+1, string(c.doc), created, t, tenant, c.agentID, prev)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return fmt.Errorf("update %s: %d rows, %v", c.agentID, n, err)
		}
		if err := b.audit(ctx, tx, tenant, "cards.update", c.agentID, prev, prev+1, t); err != nil {
			return err
		}
		return b.change(ctx, tx, tenant, c.agentID, "update", prev+1, t)
	})
}

// touch rewrites a card of the tenant at its next revision, whatever its revision is: the rows a
// write under the mixed load writes, without the read of the card before it.
func (b *baseline) touch(ctx context.Context, tenant string, c card) error {
	t := now()
	return b.write(ctx, tenant, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, b.touchCard, c.name, string(c.doc), t, tenant, c.agentID); err != nil {
			return err
		}
		if err := b.audit(ctx, tx, tenant, "cards.update", c.agentID, 0, 0, t); err != nil {
			return err
		}
		return b.change(ctx, tx, tenant, c.agentID, "update", 0, t)
	})
}

// audit inserts the write's audit entry, as the server's does in the write's transaction.
func (b *baseline) audit(ctx context.Context, tx *sql.Tx, tenant, action, agentID string, before, after int64, t time.Time) error {
	requestID := strings.ReplaceAll(uuid.NewString(), "-", "")[:requestIDChars]
	_, err := tx.ExecContext(ctx, b.insertAudit, tenant, t, auditPrincipal, requestID, action, "cards/"+agentID, before, after)
	return err
}

func (b *baseline) change(ctx context.Context, tx *sql.Tx, tenant, agentID, op string, rev int64, t time.Time) error {
	_, err := tx.ExecContext(ctx, b.insertChange, tenant, agentID, op, rev, t)
	return err
}

// write runs fn, a card write of tenant, in a transaction, then on Postgres sends its
// notification once it has committed, as the server does (storage.notifyAfter), but in the
// writer's own round trip where the server sends it from a goroutine of its own, with others.
func (b *baseline) write(ctx context.Context, tenant string, fn func(*sql.Tx) error) error {
	if err := b.tx(ctx, fn); err != nil {
		return err
	}
	if b.dialect == "postgres" {
		_, err := b.db.ExecContext(ctx, b.notify, notifyChannel, tenant)
		return err
	}
	return nil
}

// tx runs fn in a transaction (BEGIN IMMEDIATE on SQLite, from the DSN's _txlock).
func (b *baseline) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := b.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		return errors.Join(err, tx.Rollback())
	}
	return tx.Commit()
}

// writers runs n closed-loop writers on tenant for d, each registering a new card from deck and
// then updating it, in turn, as the HTTP writers do.
func (b *baseline) writers(ctx context.Context, tenant string, n int, d time.Duration, deck *deck) result {
	return closedLoop(ctx, n, d, func(_ int, k int64, r *result) {
		c := deck.card(k)
		id, created := uuid.NewString(), now()
		t0 := time.Now()
		if err := b.register(ctx, tenant, c, id, created); err != nil {
			r.fail(err.Error())
			return
		}
		r.add(kindRegister, time.Since(t0))
		t0 = time.Now()
		if err := b.update(ctx, tenant, c, id, created, 1); err != nil {
			r.fail(err.Error())
			return
		}
		r.add(kindPatch, time.Since(t0))
	})
}
