package main

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	gomysql "github.com/go-sql-driver/mysql" // also the "mysql" database/sql driver
	_ "github.com/jackc/pgx/v5/stdlib"       // the "pgx" database/sql driver
	sqlite3 "github.com/mattn/go-sqlite3"    // also the "sqlite3" database/sql driver

	scratchdb "github.com/agentcards/agentcards/bench/internal/scratch"
)

// The server's SQLite writer checkpoints only past 20,000 pages of log and leaves the rest to a
// connection of its own that checkpoints every 100 ms (storage/checkpoint.go); the baseline's
// connections do the same.
const (
	sqliteWriterPages     = 20000
	sqliteCheckpointEvery = 100 * time.Millisecond
)

func init() {
	sql.Register("sqlite3_writeload", &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		_, err := c.Exec(fmt.Sprintf("PRAGMA wal_autocheckpoint = %d", sqliteWriterPages), nil)
		return err
	}})
}

// scratch is the run's own database (see bench/internal/scratch), which the server and the
// baseline both write to.
type scratch struct {
	*scratchdb.DB
	// stopCheckpoints stops the baseline's SQLite checkpointer (nil elsewhere).
	stopCheckpoints func()
}

// newScratch creates the run's database. server is the DSN of the Postgres or MySQL server.
func newScratch(ctx context.Context, dialect, work, server string) (*scratch, error) {
	db, err := scratchdb.New(ctx, dialect, work, server, "writeload")
	if err != nil {
		return nil, err
	}
	return &scratch{DB: db}, nil
}

// checkpointInBackground checkpoints the SQLite file of dsn every sqliteCheckpointEvery on a
// connection of its own, until the scratch database is dropped.
func (s *scratch) checkpointInBackground(dsn string) error {
	conn, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return err
	}
	conn.SetMaxOpenConns(1)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(sqliteCheckpointEvery)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				_, _ = conn.Exec("PRAGMA wal_checkpoint(PASSIVE)")
			}
		}
	}()
	s.stopCheckpoints = func() {
		close(stop)
		<-done
		_ = conn.Close()
	}
	return nil
}

// openPool opens a plain database/sql pool on the scratch database with the settings the server
// gives its own (storage/db.go: sqliteParams, mysqlDSN, configurePool), so that the baseline
// differs from the server only by what the server does. They are copied here, not imported: the
// benchmark measures the server from outside, and must follow storage/db.go by hand if it changes.
func (s *scratch) openPool() (*sql.DB, error) {
	var db *sql.DB
	var err error
	switch s.Dialect {
	case "sqlite":
		// WAL, a 5 s busy timeout, BEGIN IMMEDIATE, foreign keys on, synchronous=NORMAL, and
		// checkpoints in the background.
		dsn := s.DSN + "?_journal_mode=WAL&_busy_timeout=5000&_txlock=immediate&_foreign_keys=on&_synchronous=NORMAL"
		db, err = sql.Open("sqlite3_writeload", dsn)
		if err != nil {
			return nil, err
		}
		if err := s.checkpointInBackground(dsn); err != nil {
			_ = db.Close()
			return nil, err
		}
		db.SetMaxOpenConns(4)
		db.SetMaxIdleConns(4)
		db.SetConnMaxLifetime(0)
	case "postgres":
		db, err = sql.Open("pgx", s.DSN)
		if err != nil {
			return nil, err
		}
		db.SetMaxOpenConns(10)
		db.SetMaxIdleConns(10)
		db.SetConnMaxLifetime(30 * time.Minute)
		db.SetConnMaxIdleTime(5 * time.Minute)
	case "mysql":
		cfg, err := gomysql.ParseDSN(s.DSN)
		if err != nil {
			return nil, err
		}
		cfg.ParseTime, cfg.Loc = true, time.UTC
		if err := cfg.Apply(gomysql.Charset("utf8mb4", cfg.Collation)); err != nil {
			return nil, err
		}
		db, err = sql.Open("mysql", cfg.FormatDSN())
		if err != nil {
			return nil, err
		}
		db.SetMaxOpenConns(10)
		db.SetMaxIdleConns(10)
		db.SetConnMaxLifetime(3 * time.Minute)
		db.SetConnMaxIdleTime(time.Minute)
	}
	if err := db.Ping(); err != nil {
		_ = db.Close()
		return nil, err
	}
	return db, nil
}

// rebind turns the ? placeholders of query into Postgres's $1, $2, ... (none of the queries
// here has a ? inside a literal).
func rebind(dialect, query string) string {
	if dialect != "postgres" {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
