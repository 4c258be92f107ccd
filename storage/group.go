package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/gorm"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/migrations"
)

// Group commit, on SQLite. Writes that many requests make at once (cards, delegation records and
// their outcomes) would each take the database's write lock and commit on their own; on SQLite,
// where writers queue on one lock, that caps throughput at one commit per write. The group
// committer instead runs the writes waiting at the same moment, in the order they came, in one
// transaction on the one writing connection: one commit for all of them, and no added latency
// when nothing else waits. Each write runs inside a savepoint of its own when it shares the
// transaction, so that one refused (a stale revision, a duplicate) is rolled back alone and the
// others commit. Each caller still returns only after its write committed.
//
// On Postgres and MySQL, writes run at once on the pool: those servers take concurrent writers on
// separate connections and combine their commits in the WAL flush themselves; funnelling them
// through one connection, as on SQLite, would serialize what those servers run side by side
// (BenchmarkDelegationOverhead measures a write-heavy path on each).

// groupMax bounds the writes one transaction takes.
const groupMax = 64

// groupTimeout bounds one grouped transaction.
const groupTimeout = 30 * time.Second

type groupOp struct {
	fn   func(tx *gorm.DB) error
	done chan error
}

type grouper struct {
	once sync.Once
	ops  chan groupOp
}

// grouped runs fn, one statement, durably: on SQLite through the group committer, elsewhere at
// once, in autocommit, on the pool.
func (db *DB) grouped(ctx context.Context, fn func(tx *gorm.DB) error) error {
	return db.commit(ctx, false, fn)
}

// transact runs fn, one or more statements, as one atomic write: on SQLite through the group
// committer, elsewhere in a transaction of its own. fn may fail for expected outcomes (a stale
// revision); its changes are then rolled back and the error returned.
func (db *DB) transact(ctx context.Context, fn func(tx *gorm.DB) error) error {
	return db.commit(ctx, true, fn)
}

func (db *DB) commit(ctx context.Context, inTx bool, fn func(tx *gorm.DB) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if db.dialect != migrations.SQLite {
		// As on SQLite, a write once started runs to its end whatever ctx does, so that a caller
		// never reports a failure for a write that committed.
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), groupTimeout)
		defer cancel()
		if inTx {
			// The server rolled a deadlocked transaction back whole (MySQL's InnoDB picks one
			// of two writers of the same rows, say concurrent replaces of one card; a Galera
			// node, a transaction that lost to another node's in certification): it runs
			// again, as the error asks.
			// One whose connection was lost before its commit (a failover) runs again too.
			return retryDeadlocks(wctx, func() error { return db.transaction(wctx, fn) })
		}
		// A statement in autocommit is its own transaction, rolled back whole on a deadlock
		// too. On Galera it fails so whenever a write of another node to the same rows
		// certifies first, after the server's own retries (wsrep_retry_autocommit, 1).
		return retryDeadlocks(wctx, func() error { return db.statement(wctx, fn) })
	}
	db.group.once.Do(func() {
		db.group.ops = make(chan groupOp, groupMax)
		go db.commitLoop()
	})
	op := groupOp{fn: fn, done: make(chan error, 1)}
	select {
	case db.group.ops <- op:
	case <-ctx.Done():
		return ctx.Err()
	}
	// Once queued the write happens; wait for its outcome whatever ctx does, so that a caller
	// never reports a failure for a write that committed.
	return <-op.done
}

func (db *DB) commitLoop() {
	shared := false
	for op := range db.group.ops {
		if shared {
			// The last transaction carried more than one write: writers are running at once
			// and others are likely about to queue (a delegation's outcome follows its record
			// within a call to its agent). Let the goroutines ready to run go first, once, so
			// that their writes share this commit. With nothing else ready to run this returns
			// at once; a lone writer never gets here. Under 16 concurrent sync delegations a
			// transaction carried 1.9 writes without it and 3.5 with it, and a delegation cost
			// ~8% less CPU (BenchmarkDelegationOverhead).
			runtime.Gosched()
		}
		shared = db.commitBatch(op) > 1
	}
}

// errBatch is a failure that leaves a shared transaction unusable (a savepoint could not be
// set or rolled back to): the batch is rolled back and each of its writes retried alone.
type errBatch struct{ err error }

func (e errBatch) Error() string { return e.err.Error() }

// commitBatch commits op and the writes queued behind it, tells each its outcome, and returns
// how many writes it committed or failed. A panic in a write fails its batch instead of the
// process: this loop serves every request's writes.
func (db *DB) commitBatch(op groupOp) (n int) {
	batch := []groupOp{op}
drain:
	for len(batch) < groupMax {
		select {
		case next := <-db.group.ops:
			batch = append(batch, next)
		default:
			break drain
		}
	}
	n = len(batch)
	errs := make([]error, len(batch))
	defer func() {
		if r := recover(); r != nil {
			for _, b := range batch {
				select {
				case b.done <- fmt.Errorf("storage: a grouped write panicked: %v", r):
				default: // this one has its answer already
				}
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), groupTimeout)
	defer cancel()
	err := db.writer.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if len(batch) == 1 {
			// Alone in its transaction: a failure rolls it all back, no savepoint needed.
			return batch[0].fn(tx)
		}
		for i, b := range batch {
			if err := alone(tx, b.fn); err != nil {
				if failed := (errBatch{}); errors.As(err, &failed) {
					return err
				}
				errs[i] = err
			}
		}
		return nil
	})
	var failed errBatch
	switch {
	case err == nil:
		for i, b := range batch {
			b.done <- errs[i]
		}
	case len(batch) == 1 || !errors.As(err, &failed):
		// The batch's one write failed, or the commit did: every write shares that outcome.
		for _, b := range batch {
			b.done <- err
		}
	default:
		// The shared transaction broke: give each write its own.
		for _, b := range batch {
			b.done <- db.writer.WithContext(ctx).Transaction(b.fn)
		}
	}
	return n
}

// alone runs fn inside tx within a savepoint, so that when fn fails its changes are undone and
// tx goes on. A failure of the savepoint itself comes back as errBatch.
func alone(tx *gorm.DB, fn func(tx *gorm.DB) error) error {
	conn, ok := tx.Statement.ConnPool.(*sql.Tx)
	if !ok {
		return errBatch{fmt.Errorf("storage: grouped write on a %T", tx.Statement.ConnPool)}
	}
	ctx := tx.Statement.Context
	if _, err := conn.ExecContext(ctx, "SAVEPOINT grouped_write"); err != nil {
		return errBatch{err}
	}
	if err := fn(tx); err != nil {
		if _, rerr := conn.ExecContext(ctx, "ROLLBACK TO grouped_write; RELEASE grouped_write"); rerr != nil {
			return errBatch{errors.Join(err, rerr)}
		}
		return err
	}
	if _, err := conn.ExecContext(ctx, "RELEASE grouped_write"); err != nil {
		return errBatch{err}
	}
	return nil
}

// retryDeadlocks runs fn again, up to three times, while it fails on a deadlock. A write that
// deadlocks a fourth time lost every round to concurrent writes of the same rows (on Galera, to
// other nodes' writes, which certify first): it fails as a conflict (409), which the client may
// try again, not as a failure of the server. Each wait is drawn at random, so that writers that
// collided do not collide again in step.
func retryDeadlocks(ctx context.Context, fn func() error) error {
	const tries = 4
	for try := 1; ; try++ {
		err := fn()
		if err == nil || !deadlocked(err) {
			return err
		}
		if try == tries {
			return fault.Wrap(err, fault.Conflict, "the write lost to concurrent writes of the same data %d times in a row; try again", tries)
		}
		wait := time.Duration(try)*20*time.Millisecond + rand.N(20*time.Millisecond)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// deadlocked reports whether err is a transaction the server rolled back to break a deadlock.
func deadlocked(err error) bool {
	var my *gomysql.MySQLError
	if errors.As(err, &my) && my.Number == 1213 {
		return true
	}
	var pg *pgconn.PgError
	return errors.As(err, &pg) && (pg.Code == "40P01" || pg.Code == "40001")
}
