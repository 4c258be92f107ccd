package migrations

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/pressly/goose/v3/lock"
)

// mysqlLocker is a goose SessionLocker over MySQL's named locks. GET_LOCK belongs to the session,
// so it is taken and released on the one *sql.Conn goose runs the migrations on, and the server
// frees it by itself if the process dies mid-migration.
type mysqlLocker struct {
	name    string
	timeout time.Duration
}

var _ lock.SessionLocker = (*mysqlLocker)(nil)

// maxLockName is MySQL's limit on the length of a GET_LOCK name.
const maxLockName = 64

// newMySQLLocker names the lock after the database being migrated. Named locks are server-wide
// while migrations are per database: separate databases on one server need not wait for each
// other, and replicas of one deployment still do.
func newMySQLLocker(ctx context.Context, db *sql.DB, timeout time.Duration) (*mysqlLocker, error) {
	var dbName sql.NullString
	if err := db.QueryRowContext(ctx, `SELECT DATABASE()`).Scan(&dbName); err != nil {
		return nil, fmt.Errorf("migrations: find the database to lock: %w", err)
	}
	name := "agentcards_migrate:" + dbName.String
	if len(name) > maxLockName {
		sum := sha256.Sum256([]byte(dbName.String))
		name = "agentcards_migrate:" + hex.EncodeToString(sum[:16])
	}
	return &mysqlLocker{name: name, timeout: timeout}, nil
}

// SessionLock waits up to the timeout for the lock. GET_LOCK blocks on the server, so waiting
// replicas proceed the moment the holder releases it, with no polling.
func (l *mysqlLocker) SessionLock(ctx context.Context, conn *sql.Conn) error {
	var got sql.NullInt64
	secs := int64(l.timeout / time.Second)
	if err := conn.QueryRowContext(ctx, `SELECT GET_LOCK(?, ?)`, l.name, secs).Scan(&got); err != nil {
		return fmt.Errorf("migrations: GET_LOCK(%q): %w", l.name, err)
	}
	if !got.Valid || got.Int64 != 1 {
		return fmt.Errorf("migrations: lock %q not acquired within %s: another replica is still migrating", l.name, l.timeout)
	}
	return nil
}

// SessionUnlock releases the lock. RELEASE_LOCK answers 0 if this session does not hold it and
// NULL if nobody does; both mean a bug in the lock's use, so they are errors.
func (l *mysqlLocker) SessionUnlock(ctx context.Context, conn *sql.Conn) error {
	var released sql.NullInt64
	if err := conn.QueryRowContext(ctx, `SELECT RELEASE_LOCK(?)`, l.name).Scan(&released); err != nil {
		return fmt.Errorf("migrations: RELEASE_LOCK(%q): %w", l.name, err)
	}
	if !released.Valid || released.Int64 != 1 {
		return fmt.Errorf("migrations: lock %q was not held by this session", l.name)
	}
	return nil
}
