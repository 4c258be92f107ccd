// Package scratch makes a benchmark run's own database: a SQLite file in the run's work
// directory, or a schema (Postgres) or database (MySQL) created on a server for the run and
// dropped at its end, so that nothing another run or a test uses is touched.
package scratch

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	gomysql "github.com/go-sql-driver/mysql" // also the "mysql" database/sql driver
	_ "github.com/jackc/pgx/v5/stdlib"       // the "pgx" database/sql driver
)

// DB is a run's database.
type DB struct {
	Dialect string
	// DSN is the server's database.dsn, as an operator would write it.
	DSN string
	// drop removes the schema or database (nothing for SQLite: the work directory goes).
	drop func() error
}

// DefaultServer is the test server of the dialect, as the storage tests find it:
// $AGENTCARDS_TEST_POSTGRES_DSN or $AGENTCARDS_TEST_MYSQL_DSN, else the local one; "" for SQLite.
func DefaultServer(dialect string) string {
	switch dialect {
	case "postgres":
		if v := os.Getenv("AGENTCARDS_TEST_POSTGRES_DSN"); v != "" {
			return v
		}
		return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	case "mysql":
		if v := os.Getenv("AGENTCARDS_TEST_MYSQL_DSN"); v != "" {
			return v
		}
		return "root@tcp(127.0.0.1:3306)/test"
	}
	return ""
}

// New creates the run's database of dialect: agentcards.db under work for SQLite, else a schema
// or database named prefix_<random> on server (a Postgres or MySQL DSN).
func New(ctx context.Context, dialect, work, server, prefix string) (*DB, error) {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	name := prefix + "_" + hex.EncodeToString(b)
	switch dialect {
	case "sqlite":
		return &DB{Dialect: dialect, DSN: filepath.Join(work, "agentcards.db"), drop: func() error { return nil }}, nil
	case "postgres":
		u, err := url.Parse(server)
		if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			return nil, fmt.Errorf("postgres dsn: want a postgres:// URL, got %q", server)
		}
		if err := Admin(ctx, "pgx", server, "CREATE SCHEMA "+name); err != nil {
			return nil, err
		}
		q := u.Query()
		q.Set("search_path", name)
		u.RawQuery = q.Encode()
		return &DB{Dialect: dialect, DSN: u.String(), drop: func() error {
			return Admin(context.Background(), "pgx", server, "DROP SCHEMA "+name+" CASCADE")
		}}, nil
	case "mysql":
		cfg, err := gomysql.ParseDSN(server)
		if err != nil {
			return nil, fmt.Errorf("mysql dsn: %w", err)
		}
		// The collation the migrations give the tables, so ids compare byte-wise.
		if err := Admin(ctx, "mysql", server, "CREATE DATABASE "+name+" CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
			return nil, err
		}
		cfg.DBName = name
		return &DB{Dialect: dialect, DSN: cfg.FormatDSN(), drop: func() error {
			return Admin(context.Background(), "mysql", server, "DROP DATABASE "+name)
		}}, nil
	}
	return nil, fmt.Errorf("unknown dialect %q (want sqlite, postgres or mysql)", dialect)
}

// Drop removes the schema or database from its server (nothing for SQLite).
func (d *DB) Drop() error { return d.drop() }

// Admin runs one statement on the server of dsn, outside any run's database.
func Admin(ctx context.Context, driver, dsn, stmt string) error {
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
