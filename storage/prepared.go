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

	"gorm.io/gorm"
)

// prepared is one hot query, written with ? placeholders and explicit columns, prepared once on
// first use; database/sql then prepares it on each pooled connection as needed. The queries on
// every request's path use it instead of GORM's reflection. Explicit columns keep a prepared
// SELECT valid when a later migration adds a column (Postgres refuses a cached plan whose result
// type changed).
type prepared struct {
	db    *DB
	query string

	mu   sync.Mutex
	stmt atomic.Pointer[sql.Stmt]
}

// prepare returns the DB's prepared form of query.
func (db *DB) prepare(query string) *prepared {
	if p, ok := db.stmts.Load(query); ok {
		return p.(*prepared)
	}
	p, _ := db.stmts.LoadOrStore(query, &prepared{db: db, query: query})
	return p.(*prepared)
}

func (p *prepared) get(ctx context.Context) (*sql.Stmt, error) {
	db := p.db
	if stmt := p.stmt.Load(); stmt != nil {
		return stmt, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if stmt := p.stmt.Load(); stmt != nil {
		return stmt, nil
	}
	stmt, err := db.sql.PrepareContext(ctx, rebind(db.dialect, p.query))
	if err != nil {
		return nil, err
	}
	p.stmt.Store(stmt)
	return stmt, nil
}

// exec runs the statement on tx, in tx's context: a grouped write's *sql.Tx, or the pool.
func (p *prepared) exec(tx *gorm.DB, args ...any) (sql.Result, error) {
	ctx := tx.Statement.Context
	stmt, err := p.get(ctx)
	if err != nil {
		return nil, err
	}
	var res sql.Result
	switch pool := tx.Statement.ConnPool.(type) {
	case *sql.Tx:
		// StmtContext reuses the statement already prepared on the transaction's connection.
		txStmt := pool.StmtContext(ctx, stmt)
		defer txStmt.Close()
		res, err = txStmt.ExecContext(ctx, args...)
	case *sql.DB: // autocommit, see grouped
		res, err = stmt.ExecContext(ctx, args...)
	default:
		return nil, fmt.Errorf("storage: prepared statement on a %T", pool)
	}
	return res, p.db.translate(err)
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

// rows runs the query outside any transaction.
func (p *prepared) rows(ctx context.Context, args ...any) (*sql.Rows, error) {
	stmt, err := p.get(ctx)
	if err != nil {
		return nil, err
	}
	return stmt.QueryContext(ctx, args...)
}

// queryRow runs the statement outside any transaction.
func (p *prepared) queryRow(ctx context.Context, args ...any) (*sql.Row, error) {
	stmt, err := p.get(ctx)
	if err != nil {
		return nil, err
	}
	return stmt.QueryRowContext(ctx, args...), nil
}
