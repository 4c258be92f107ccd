package storage

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/gorm"

	"github.com/agentcards/agentcards/authz/fault"
)

// lostTries is how many times a transaction whose connection was lost before its commit runs in
// all: the idle connections are dropped after each loss, so the next try opens a new one.
const lostTries = 3

// connLost reports whether err says that the statement's connection no longer leads to a server
// that takes writes: the server went away, is shutting down or starting, or is a read-only
// standby (a failover, a restart). Such a connection is not used again (the driver closes it),
// and the pool's idle connections were most likely opened to the same server. A timeout is not
// one: the server may still be working on the statement. Nor is a new connection that could not
// be opened: the database does not answer, which the tenant gate finds out and reports (see
// docs/storage.md, "Reads during a database outage").
func connLost(err error) bool {
	if errors.As(err, new(*pgconn.ConnectError)) {
		return false
	}
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		// 08: connection exception; 57P01-57P03: admin shutdown, crash shutdown, cannot connect
		// now; 25006: read-only transaction (a standby, or a primary demoted under us).
		return strings.HasPrefix(pg.Code, "08") || pg.Code == "57P01" || pg.Code == "57P02" ||
			pg.Code == "57P03" || pg.Code == "25006"
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	return ne != nil || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) ||
		errors.Is(err, gomysql.ErrInvalidConn) || pgconn.SafeToRetry(err)
}

// transaction runs fn in a transaction on the writing pool. If the connection is lost before the
// commit was sent (a failover or a restart of the server), nothing was written: the idle
// connections, opened to the server that went away, are dropped and fn runs again on a new one,
// up to lostTries in all. A connection lost at the commit, or every try lost, is fault.Unavailable:
// the client tries again later (a commit whose answer was lost may have been applied).
func (db *DB) transaction(ctx context.Context, fn func(tx *gorm.DB) error) error {
	for try := 1; ; try++ {
		committing := false
		err := db.writer.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			if err := fn(tx); err != nil {
				return err
			}
			committing = true
			return nil
		})
		if err == nil || !connLost(err) {
			return err
		}
		db.DropIdle()
		if committing || try == lostTries || ctx.Err() != nil {
			return lostWrite(err, committing)
		}
	}
}

// statement runs fn, one statement in autocommit, on the writing pool. A connection lost on it
// is fault.Unavailable, without running it again: it may have been applied (the driver has
// already tried again on a new connection a statement that was never sent).
func (db *DB) statement(ctx context.Context, fn func(tx *gorm.DB) error) error {
	err := fn(db.writer.WithContext(ctx))
	if err != nil && connLost(err) {
		db.DropIdle()
		return lostWrite(err, true)
	}
	return err
}

// lostWrite is the error of a write whose connection was lost, committing or not.
func lostWrite(err error, committing bool) error {
	if committing {
		return fault.Wrap(err, fault.Unavailable, "the connection to the database was lost as the write was committed; it may have been applied: try again later")
	}
	return fault.Wrap(err, fault.Unavailable, "the database is unavailable; try again later")
}
