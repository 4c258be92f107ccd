package migrations

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/pressly/goose/v3/lock"
)

// mysqlLocker is a goose SessionLocker over MySQL's named locks. GET_LOCK belongs to the session,
// so it is taken and released on the one *sql.Conn goose runs the migrations on, and the server
// frees it by itself if the process dies mid-migration.
//
// On a MariaDB Galera cluster a named lock holds on its node only, so the locker also takes a
// lease that holds across the cluster: a row of its own in agentcards_migration_lock, inserted
// and committed (of two nodes' inserts, certification lets one commit), renewed while the
// migrations run, deleted when they are done, and taken over by a waiting replica once it
// expires (its holder died and stopped renewing it).
type mysqlLocker struct {
	name    string
	timeout time.Duration
	// galera is set on a node of a Galera cluster (wsrep_on); holder names this locker's lease.
	galera bool
	holder string
	// db renews the lease while it is held, every renewEvery, for leaseFor each time (the wait
	// for the lock); stop ends the renewals, done says they ended.
	db         *sql.DB
	leaseFor   time.Duration
	renewEvery time.Duration
	stop, done chan struct{}
}

// leaseTable holds the Galera lease (see mysqlLocker); it is made when first needed, outside
// the migrations.
const leaseTable = "agentcards_migration_lock"

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
	l := &mysqlLocker{name: name, timeout: timeout, db: db, leaseFor: timeout, renewEvery: timeout / 5}
	// MariaDB answers wsrep_on ON on a node of a Galera cluster; MySQL has no such variable.
	var variable, value string
	switch err := db.QueryRowContext(ctx, `SHOW VARIABLES LIKE 'wsrep_on'`).Scan(&variable, &value); {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return nil, fmt.Errorf("migrations: find whether the server is a Galera node: %w", err)
	default:
		l.galera = strings.EqualFold(value, "ON")
	}
	if l.galera {
		var b [12]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, err
		}
		l.holder = hex.EncodeToString(b[:])
	}
	return l, nil
}

// renew keeps the lease from expiring while its holder migrates, however long that takes: a
// replica that died stops renewing, and its lease expires leaseFor after the last renewal.
func (l *mysqlLocker) renew() {
	l.stop, l.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(l.done)
		t := time.NewTicker(l.renewEvery)
		defer t.Stop()
		for {
			select {
			case <-l.stop:
				return
			case <-t.C:
				ctx, cancel := context.WithTimeout(context.Background(), l.renewEvery)
				_, _ = l.db.ExecContext(ctx, `UPDATE `+leaseTable+` SET expires_at = NOW(6) + INTERVAL ? MICROSECOND WHERE id = 1 AND holder = ?`,
					l.leaseFor.Microseconds(), l.holder)
				cancel()
			}
		}
	}()
}

// leaseRetry is how often a replica waiting for the Galera lease tries again.
const leaseRetry = 100 * time.Millisecond

// lease takes the Galera lease (see mysqlLocker) by the deadline: it inserts the lease's row,
// and while another holder's row is there (or its insert won certification), removes it if it
// expired and tries again. Once taken, the lease is renewed until it is given back (see renew).
func (l *mysqlLocker) lease(ctx context.Context, conn *sql.Conn, deadline time.Time) error {
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+leaseTable+` (
		id INT PRIMARY KEY, holder VARCHAR(64) NOT NULL, expires_at DATETIME(6) NOT NULL)`); err != nil {
		return fmt.Errorf("migrations: create %s: %w", leaseTable, err)
	}
	for {
		_, err := conn.ExecContext(ctx, `INSERT INTO `+leaseTable+` (id, holder, expires_at) VALUES (1, ?, NOW(6) + INTERVAL ? MICROSECOND)`,
			l.holder, l.leaseFor.Microseconds())
		var my *mysql.MySQLError
		switch {
		case err == nil:
			l.renew()
			return nil
		case !errors.As(err, &my) || (my.Number != 1062 && my.Number != 1213): // duplicate key, deadlock
			return fmt.Errorf("migrations: take the migration lease: %w", err)
		case time.Now().After(deadline):
			return fmt.Errorf("migrations: migration lease not taken within %s: a replica on another node is still migrating", l.timeout)
		}
		if _, err := conn.ExecContext(ctx, `DELETE FROM `+leaseTable+` WHERE id = 1 AND expires_at < NOW(6)`); err != nil && !errors.As(err, &my) {
			return fmt.Errorf("migrations: remove an expired migration lease: %w", err)
		}
		select {
		case <-time.After(leaseRetry):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
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
	if l.galera {
		if err := l.lease(ctx, conn, time.Now().Add(l.timeout)); err != nil {
			_, _ = conn.ExecContext(ctx, `SELECT RELEASE_LOCK(?)`, l.name)
			return err
		}
	}
	return nil
}

// SessionUnlock releases the lock. RELEASE_LOCK answers 0 if this session does not hold it and
// NULL if nobody does; both mean a bug in the lock's use, so they are errors.
func (l *mysqlLocker) SessionUnlock(ctx context.Context, conn *sql.Conn) error {
	if l.galera {
		if l.stop != nil {
			close(l.stop)
			<-l.done
			l.stop = nil
		}
		if _, err := conn.ExecContext(ctx, `DELETE FROM `+leaseTable+` WHERE id = 1 AND holder = ?`, l.holder); err != nil {
			return fmt.Errorf("migrations: give the migration lease back: %w", err)
		}
	}
	var released sql.NullInt64
	if err := conn.QueryRowContext(ctx, `SELECT RELEASE_LOCK(?)`, l.name).Scan(&released); err != nil {
		return fmt.Errorf("migrations: RELEASE_LOCK(%q): %w", l.name, err)
	}
	if !released.Valid || released.Int64 != 1 {
		return fmt.Errorf("migrations: lock %q was not held by this session", l.name)
	}
	return nil
}
