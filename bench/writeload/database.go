package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	gomysql "github.com/go-sql-driver/mysql" // also the "mysql" database/sql driver
	_ "github.com/jackc/pgx/v5/stdlib"       // the "pgx" database/sql driver
	sqlite3 "github.com/mattn/go-sqlite3"    // also the "sqlite3" database/sql driver
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

// scratch is the run's own database: a SQLite file in the work directory, or a schema (Postgres)
// or database (MySQL) created on the server for this run and dropped at its end, so that nothing
// another run or a test uses is touched. The server and the baseline both write to it.
type scratch struct {
	dialect string
	// dsn is the server's database.dsn, as an operator would write it.
	dsn string
	// drop removes the schema or database (nothing for SQLite: the work directory goes).
	drop func() error
	// stopCheckpoints stops the baseline's SQLite checkpointer (nil elsewhere).
	stopCheckpoints func()
}

// newScratch creates the run's database. server is the DSN of the Postgres or MySQL server.
func newScratch(ctx context.Context, dialect, work, server string) (*scratch, error) {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	name := "writeload_" + hex.EncodeToString(b)
	switch dialect {
	case "sqlite":
		return &scratch{dialect: dialect, dsn: filepath.Join(work, "agentcards.db"), drop: func() error { return nil }}, nil
	case "postgres":
		if err := admin(ctx, "pgx", server, "CREATE SCHEMA "+name); err != nil {
			return nil, err
		}
		u, err := url.Parse(server)
		if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			return nil, fmt.Errorf("postgres dsn: want a postgres:// URL, got %q", server)
		}
		q := u.Query()
		q.Set("search_path", name)
		u.RawQuery = q.Encode()
		return &scratch{dialect: dialect, dsn: u.String(), drop: func() error {
			return admin(context.Background(), "pgx", server, "DROP SCHEMA "+name+" CASCADE")
		}}, nil
	case "mysql":
		cfg, err := gomysql.ParseDSN(server)
		if err != nil {
			return nil, fmt.Errorf("mysql dsn: %w", err)
		}
		// The collation the migrations give the tables, so ids compare byte-wise.
		if err := admin(ctx, "mysql", server, "CREATE DATABASE "+name+" CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
			return nil, err
		}
		cfg.DBName = name
		return &scratch{dialect: dialect, dsn: cfg.FormatDSN(), drop: func() error {
			return admin(context.Background(), "mysql", server, "DROP DATABASE "+name)
		}}, nil
	}
	return nil, fmt.Errorf("unknown dialect %q (want sqlite, postgres or mysql)", dialect)
}

// admin runs one statement on the server, outside the scratch database.
func admin(ctx context.Context, driver, dsn, stmt string) error {
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := db.ExecContext(ctx, stmt); err != nil {
		return fmt.Errorf("%s: %w", stmt, err)
	}
	return nil
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
	switch s.dialect {
	case "sqlite":
		// WAL, a 5 s busy timeout, BEGIN IMMEDIATE, foreign keys on, synchronous=NORMAL, and
		// checkpoints in the background.
		dsn := s.dsn + "?_journal_mode=WAL&_busy_timeout=5000&_txlock=immediate&_foreign_keys=on&_synchronous=NORMAL"
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
		db, err = sql.Open("pgx", s.dsn)
		if err != nil {
			return nil, err
		}
		db.SetMaxOpenConns(10)
		db.SetMaxIdleConns(10)
		db.SetConnMaxLifetime(30 * time.Minute)
		db.SetConnMaxIdleTime(5 * time.Minute)
	case "mysql":
		cfg, err := gomysql.ParseDSN(s.dsn)
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
