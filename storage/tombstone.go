package storage

import (
	"database/sql"
	"fmt"
	"math/bits"
	"slices"
	"strings"

	"gorm.io/gorm"

	"github.com/agentcards/agentcards/migrations"
)

// An agent id's revisions never repeat. A deleted card leaves its last revision in
// card_tombstones, and a card registered again under the id starts after it, so an ETag taken
// from the deleted card never matches its successor: a conditional write or a conditional GET
// cannot mistake one for the other (with revisions starting again at 1, If-Match: "1" sent for
// the old card changed the new one, and If-None-Match answered 304 for it).
//
// On Postgres and MySQL, writers run concurrently: a create and a delete of the same id each
// lock the id's tombstone row first (taking it at revision 0 if there is none), so a create that
// races a delete waits for it and then reads the revision it left. On SQLite writes run one at a
// time and reading the row is enough.

// tombstoneKeep is the end of an INSERT of tombstone rows that leaves an existing row as it is,
// but locked by the transaction.
func (db *DB) tombstoneKeep() string {
	if db.dialect == migrations.MySQL {
		return " ON DUPLICATE KEY UPDATE revision = revision"
	}
	return " ON CONFLICT (tenant_id, agent_id) DO UPDATE SET revision = card_tombstones.revision"
}

// tombstoneRows is the VALUES list of n tombstone rows at revision 0.
func tombstoneRows(n int) string {
	return "INSERT INTO card_tombstones (tenant_id, agent_id, revision) VALUES (?, ?, 0)" + strings.Repeat(", (?, ?, 0)", n-1)
}

// lastRevisions returns, in tx, the last revision each of the ids reached before its card was
// deleted (absent when it never was), for creating their cards in tx: each starts at it plus
// one. On Postgres and MySQL the tombstone rows are locked (see above).
func (db *DB) lastRevisions(tx *gorm.DB, tenant string, ids []string) (map[string]int64, error) {
	last := make(map[string]int64, len(ids))
	// Each id once: a row proposed twice in one upsert fails on Postgres, and a batch that
	// repeats an id fails on the cards' key after.
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	scan := func(rs *sql.Rows) error {
		var id string
		var rev int64
		if err := rs.Scan(&id, &rev); err != nil {
			return err
		}
		if rev > 0 {
			last[id] = rev
		}
		return nil
	}
	for len(ids) > 0 {
		part := ids[:min(len(ids), maxLookup/2)]
		ids = ids[len(part):]
		args := make([]any, 0, 2*len(part))
		for _, id := range part {
			args = append(args, tenant, id)
		}
		var err error
		switch db.dialect {
		case migrations.Postgres:
			// The upsert returns each row as it stands once locked, committed deletes included.
			err = db.upsert(tx, tombstoneRows(len(part))+db.tombstoneKeep()+" RETURNING agent_id, revision", scan, args)
		case migrations.MySQL:
			if err = db.upsert(tx, tombstoneRows(len(part))+db.tombstoneKeep(), nil, args); err == nil {
				// A locking read: the rows as they stand, not as the transaction's snapshot had them.
				q, in := selectTombstones(tenant, part)
				err = db.prepare(q+" FOR UPDATE").each(tx, scan, in...)
			}
		default:
			q, in := selectTombstones(tenant, part)
			err = db.prepare(q).each(tx, scan, in...)
		}
		if err != nil {
			return nil, fmt.Errorf("read the last revisions of deleted cards: %w", err)
		}
	}
	return last, nil
}

// selectTombstones is the query of the tombstone rows of ids and its arguments. The list is
// padded to a power of two with its last id, so that few statements are prepared.
func selectTombstones(tenant string, ids []string) (string, []any) {
	size := 1 << bits.Len(uint(len(ids)-1))
	args := make([]any, 0, size+1)
	args = append(args, tenant)
	for i := range size {
		args = append(args, ids[min(i, len(ids)-1)])
	}
	return "SELECT agent_id, revision FROM card_tombstones WHERE tenant_id = ? AND agent_id IN (?" + strings.Repeat(", ?", size-1) + ")", args
}

// upsert runs an INSERT of tombstone rows in tx, and scans what it returns if scan is set. One
// row's statement is prepared; a batch's, whose row counts vary and may not repeat a row (as
// padding would), runs as it is.
func (db *DB) upsert(tx *gorm.DB, q string, scan func(*sql.Rows) error, args []any) error {
	if len(args) == 2 {
		if scan != nil {
			return db.prepare(q).each(tx, scan, args...)
		}
		_, err := db.prepare(q).exec(tx, args...)
		return err
	}
	if scan == nil {
		return tx.Exec(q, args...).Error
	}
	rs, err := tx.Raw(q, args...).Rows()
	if err != nil {
		return err
	}
	return scanAll(rs, scan)
}

// lockTombstone takes agentID's tombstone row in tx before its card is deleted, on the
// dialects whose writers run concurrently (see above).
func (db *DB) lockTombstone(tx *gorm.DB, tenant, agentID string) error {
	if db.dialect == migrations.SQLite {
		return nil
	}
	_, err := db.prepare(tombstoneRows(1)+db.tombstoneKeep()).exec(tx, tenant, agentID)
	return err
}

// bury records in tx that agentID's card was deleted at revision rev.
func (db *DB) bury(tx *gorm.DB, tenant, agentID string, rev int64) error {
	set := " ON CONFLICT (tenant_id, agent_id) DO UPDATE SET revision = excluded.revision"
	if db.dialect == migrations.MySQL {
		set = " ON DUPLICATE KEY UPDATE revision = VALUES(revision)"
	}
	_, err := db.prepare("INSERT INTO card_tombstones (tenant_id, agent_id, revision) VALUES (?, ?, ?)"+set).exec(tx, tenant, agentID, rev)
	return err
}
