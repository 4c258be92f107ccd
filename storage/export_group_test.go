package storage

import (
	"context"
	"database/sql"
	"sync"
	"sync/atomic"
	"testing"

	"gorm.io/gorm"
)

// HoldGroupCommit occupies db's group committer (SQLite) with a write that waits, inside its
// transaction, until release is called; the grouped writes made meanwhile queue behind it, so a
// test decides what one batch holds. release returns once the held write committed.
func HoldGroupCommit(t testing.TB, db *DB) (release func()) {
	t.Helper()
	started, hold, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- db.grouped(context.Background(), func(*gorm.DB) error {
			close(started)
			<-hold
			return nil
		})
	}()
	<-started
	var once sync.Once
	return func() {
		once.Do(func() {
			close(hold)
			if err := <-done; err != nil {
				t.Errorf("the held write: %v", err)
			}
		})
	}
}

// QueuedGroupWrites is how many grouped writes wait for the committer; call it only after
// HoldGroupCommit, which starts the committer.
func QueuedGroupWrites(db *DB) int { return len(db.group.ops) }

// CountTransactions makes db count, from now on, the transactions it begins through GORM (each
// batch of the group committer is one), by wrapping its connection pool. Call it while nothing
// else uses db, and only on SQLite: on Postgres and MySQL grouped writes run on the bare pool.
func CountTransactions(db *DB) *atomic.Int64 {
	c := &txCounter{DB: db.wsql}
	db.writer.Statement.ConnPool = c
	return &c.n
}

// txCounter is the pool with a count of BeginTx calls; gorm.DB.Transaction begins through it.
type txCounter struct {
	*sql.DB
	n atomic.Int64
}

func (c *txCounter) BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error) {
	c.n.Add(1)
	return c.DB.BeginTx(ctx, opts)
}

// WriteOnReadPool tries a write on db's read pool and returns its error.
func WriteOnReadPool(ctx context.Context, db *DB) error {
	return db.with(ctx).Exec("DELETE FROM card_changes").Error
}
