package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/migrations"

	"gorm.io/gorm"
)

// prepared is one hot query, written with ? placeholders and explicit columns, prepared once on
// first use; database/sql then prepares it on each pooled connection as needed. The queries on
// every request's path use it instead of GORM's reflection. Explicit columns keep a prepared
// SELECT valid when a later migration adds a column (Postgres refuses a cached plan whose result
// type changed). On a Postgres DSN without named prepared statements (DB.unprepared, for a
// pooler in transaction mode) nothing is prepared: each query goes to the pool as text.
type prepared struct {
	db    *DB
	query string

	preparing atomic.Bool // a background preparation on the writing pool is under way
	// read is prepared on the read pool, write on the writing pool (the same pool but on
	// SQLite): a statement runs only on connections of the pool it was prepared on. Each has
	// its own lock: preparing on SQLite's one writing connection waits for the write queue,
	// which a read must not wait for.
	read, write     atomic.Pointer[sql.Stmt]
	readMu, writeMu sync.Mutex
}

// prepare returns the DB's prepared form of query.
func (db *DB) prepare(query string) *prepared {
	if p, ok := db.stmts.Load(query); ok {
		return p.(*prepared)
	}
	p, _ := db.stmts.LoadOrStore(query, &prepared{db: db, query: query})
	return p.(*prepared)
}

// get returns the statement prepared on the read pool, or on the writing pool if write.
func (p *prepared) get(ctx context.Context, write bool) (*sql.Stmt, error) {
	db, slot, pool, mu := p.db, &p.read, p.db.sql, &p.readMu
	if write {
		slot, pool, mu = &p.write, db.wsql, &p.writeMu
	}
	if stmt := slot.Load(); stmt != nil {
		return stmt, nil
	}
	mu.Lock()
	defer mu.Unlock()
	if stmt := slot.Load(); stmt != nil {
		return stmt, nil
	}
	stmt, err := pool.PrepareContext(ctx, rebind(db.dialect, p.query))
	if err != nil {
		return nil, err
	}
	slot.Store(stmt)
	return stmt, nil
}

// exec runs the statement on tx, in tx's context: a write's *sql.Tx, or the writing pool.
func (p *prepared) exec(tx *gorm.DB, args ...any) (sql.Result, error) {
	ctx := tx.Statement.Context
	var res sql.Result
	var err error
	switch pool := tx.Statement.ConnPool.(type) {
	case *sql.Tx:
		stmt := p.inTx()
		if stmt == nil {
			res, err = pool.ExecContext(ctx, rebind(p.db.dialect, p.query), args...)
			break
		}
		// StmtContext reuses the statement already prepared on the transaction's connection.
		txStmt := pool.StmtContext(ctx, stmt)
		defer txStmt.Close()
		res, err = txStmt.ExecContext(ctx, args...)
	case *sql.DB: // autocommit, see grouped
		if p.db.unprepared {
			res, err = pool.ExecContext(ctx, rebind(p.db.dialect, p.query), args...)
			break
		}
		stmt, perr := p.get(ctx, true)
		if perr != nil {
			return nil, perr
		}
		res, err = stmt.ExecContext(ctx, args...)
	default:
		return nil, fmt.Errorf("storage: prepared statement on a %T", pool)
	}
	return res, p.db.translate(err)
}

// inTx returns the statement prepared on the writing pool, for a transaction to use; nil if it
// is not prepared yet, and the caller then runs the query unprepared this once. Preparing on
// the pool needs a second connection while the transaction holds one: on SQLite's one writing
// connection it would wait for ever, and on a server's pool as many transactions as connections
// would wait for each other. So it is prepared in the background, which waits for a free
// connection without holding any. On a DB that prepares nothing (unprepared) it is always nil.
func (p *prepared) inTx() *sql.Stmt {
	if p.db.unprepared {
		return nil
	}
	if stmt := p.write.Load(); stmt != nil {
		return stmt
	}
	if p.preparing.CompareAndSwap(false, true) {
		go func() {
			defer p.preparing.Store(false)
			ctx, cancel := context.WithTimeout(context.Background(), groupTimeout)
			defer cancel()
			// A failure leaves it unprepared, to be tried again on its next use.
			_, _ = p.get(ctx, true)
		}()
	}
	return nil
}

// translate does for the prepared statements, which bypass GORM, what TranslateError does for
// GORM's (see Open): a unique or foreign-key violation wraps gorm.ErrDuplicatedKey or
// gorm.ErrForeignKeyViolated, so that callers test it with errors.Is. Without it a duplicate
// delegation record failed with the driver's own error on each dialect. The driver's error stays
// in the chain for the logs.
func (db *DB) translate(err error) error {
	if err == nil {
		return nil
	}
	tr, ok := db.gorm.Dialector.(gorm.ErrorTranslator)
	if !ok {
		return err
	}
	// Only the two sentinels are taken: comparing the translation with err itself would
	// panic on an error value that is not comparable.
	if t := tr.Translate(err); errors.Is(t, gorm.ErrDuplicatedKey) || errors.Is(t, gorm.ErrForeignKeyViolated) {
		return fmt.Errorf("%w: %w", t, err)
	}
	return err
}

// rebind turns ? placeholders into Postgres's $1, $2, ... (the queries hold no literal ?).
func rebind(dialect, query string) string {
	if dialect != "postgres" {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// rows runs the query on the read pool, outside any transaction.
func (p *prepared) rows(ctx context.Context, args ...any) (*sql.Rows, error) {
	if p.db.unprepared {
		return p.db.sql.QueryContext(ctx, rebind(p.db.dialect, p.query), args...)
	}
	stmt, err := p.get(ctx, false)
	if err != nil {
		return nil, err
	}
	return stmt.QueryContext(ctx, args...)
}

// queryRow runs the statement on the read pool, outside any transaction.
func (p *prepared) queryRow(ctx context.Context, args ...any) (*sql.Row, error) {
	if p.db.unprepared {
		return p.db.sql.QueryRowContext(ctx, rebind(p.db.dialect, p.query), args...), nil
	}
	stmt, err := p.get(ctx, false)
	if err != nil {
		return nil, err
	}
	return stmt.QueryRowContext(ctx, args...), nil
}

// bounded returns the context for an index build's batch read (cards.WithBatchRead): on
// SQLite with a read pool, one that cannot be cancelled, because go-sqlite3 steps every row of a
// cancellable query in a goroutine of its own to watch the context (a goroutine and two channel
// handoffs per row: 100,000 of them in a build). Such a batch reads at most getManyMax rows of a
// local file, which cannot hang as a network can, and the build checks its context between
// batches and GetMany after the query. Every other read, and every read elsewhere, keeps ctx
// (on a database in memory reads share the writer's connection, and could wait behind writes).
func (db *DB) bounded(ctx context.Context) context.Context {
	if db.dialect == migrations.SQLite && db.sql != db.wsql && cards.BatchRead(ctx) {
		return context.WithoutCancel(ctx)
	}
	return ctx
}
