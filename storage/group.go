package storage

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/agentcards/agentcards/migrations"
)

// Group commit, on SQLite. Writes that many requests make at once (a delegation's record and
// its outcome) would each take the database's write lock and commit on their own; on SQLite,
// where writers queue on one lock, that caps throughput at one commit per write. grouped instead
// runs the writes waiting at the same moment in one transaction: one commit for all of them, and
// no added latency when nothing else waits. Each caller still returns only after its write
// committed.
//
// On Postgres and MySQL, grouped runs the write at once on the pool, as its own statement: those
// servers take concurrent writers on separate connections and combine their commits in the WAL
// flush themselves. Funnelling them through one connection, as on SQLite, made delegations 2.5×
// (Postgres) and 1.5× (MySQL) slower in BenchmarkDelegationOverhead.

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

// errInBatch marks which write of a batch failed, so that the others can be retried alone.
type errInBatch struct {
	i   int
	err error
}

func (e errInBatch) Error() string { return e.err.Error() }

// grouped runs fn, one statement, durably. On SQLite it runs in a transaction shared with the
// other grouped writes waiting now; fn must not fail for expected outcomes (report them through
// its closure): an error makes the batch roll back, and every write of it is then retried in a
// transaction of its own. On Postgres and MySQL it runs at once, in autocommit, on the pool.
func (db *DB) grouped(ctx context.Context, fn func(tx *gorm.DB) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if db.dialect != migrations.SQLite {
		// As on SQLite, a write once started runs to its end whatever ctx does, so that a caller
		// never reports a failure for a write that committed.
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), groupTimeout)
		defer cancel()
		return fn(db.gorm.WithContext(wctx))
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
	for op := range db.group.ops {
		db.commitBatch(op)
	}
}

// commitBatch commits op and the writes queued behind it, and tells each its outcome. A panic
// in a write fails its batch instead of the process: this loop serves every request's writes.
func (db *DB) commitBatch(op groupOp) {
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
	err := db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		for i, b := range batch {
			if err := b.fn(tx); err != nil {
				return errInBatch{i, err}
			}
		}
		return nil
	})
	var failed errInBatch
	switch {
	case err == nil:
		for _, b := range batch {
			b.done <- nil
		}
	case len(batch) == 1 || !errors.As(err, &failed):
		if errors.As(err, &failed) {
			err = failed.err
		}
		for _, b := range batch {
			b.done <- err
		}
	default:
		// One write failed and took the others down with it: give each its own transaction.
		for _, b := range batch {
			b.done <- db.gorm.WithContext(ctx).Transaction(b.fn)
		}
	}
}
