package storagetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql" // also the "mysql" database/sql driver
	_ "github.com/jackc/pgx/v5/stdlib"       // the "pgx" database/sql driver
	_ "github.com/mattn/go-sqlite3"          // the "sqlite3" database/sql driver

	"github.com/agentcards/agentcards/migrations"
)

// The environment variables that name the test servers; see the package comment.
const (
	postgresEnv = "AGENTCARDS_TEST_POSTGRES_DSN"
	mysqlEnv    = "AGENTCARDS_TEST_MYSQL_DSN"
)

// answered holds the DSNs of servers that answered a ping in this process, so that each is
// pinged once rather than once per test.
var answered sync.Map

// ServerDSN returns the DSN of the test server for dialect ("" for SQLite, which needs none),
// applying the package comment's rule: skip locally without it, fail in CI or if it is unreachable.
func ServerDSN(t testing.TB, dialect string) string {
	t.Helper()
	var env, driver string
	switch dialect {
	case migrations.SQLite:
		return ""
	case migrations.Postgres:
		env, driver = postgresEnv, "pgx"
	case migrations.MySQL:
		env, driver = mysqlEnv, "mysql"
	default:
		t.Fatalf("storagetest: unknown dialect %q", dialect)
	}
	dsn := os.Getenv(env)
	if dsn == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("storagetest: %s is not set; CI must test against a real server", env)
		}
		t.Skipf("storagetest: %s is not set; set it to run this test against a real server", env)
	}
	if _, ok := answered.Load(dsn); ok {
		return dsn
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	db, err := sql.Open(driver, dsn)
	if err == nil {
		err = db.PingContext(ctx)
		_ = db.Close()
	}
	if err != nil {
		t.Fatalf("storagetest: %s is set but the server does not answer: %v", env, err)
	}
	answered.Store(dsn, struct{}{})
	return dsn
}

// EmptyDatabase creates a database of dialect with no tables at all, not even the migrations'
// (a SQLite file in t.TempDir(), a Postgres schema, a MySQL database), dropped when the test
// ends, for tests of the migrations themselves; driver is the database/sql driver name.
func EmptyDatabase(t testing.TB, dialect string) (driver, dsn string) {
	t.Helper()
	server := ServerDSN(t, dialect)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	switch dialect {
	case migrations.SQLite:
		// storage.Open adds the other connection settings; these two make the file usable by
		// several connections of a plain database/sql pool too.
		return "sqlite3", "file:" + filepath.Join(t.TempDir(), "agentcards.db") + "?_txlock=immediate&_busy_timeout=5000"
	case migrations.Postgres:
		return "pgx", postgresDatabase(ctx, t, server)
	default: // MySQL; ServerDSN has refused any other dialect
		return "mysql", mysqlDatabase(ctx, t, server)
	}
}

// uniqueName returns a fresh lowercase identifier, safe unquoted in SQL on every dialect.
func uniqueName(t testing.TB) string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("storagetest: %v", err)
	}
	return "agentcards_test_" + hex.EncodeToString(b)
}

// admin runs statements on a server outside any test database.
func admin(ctx context.Context, t testing.TB, driver, dsn string, stmts ...string) {
	t.Helper()
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatalf("storagetest: %v", err)
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.ExecContext(ctx, s); err != nil {
			t.Fatalf("storagetest: %s: %v", s, err)
		}
	}
}

// dropAtCleanup removes a test schema or database when the test ends; a failure is logged but
// does not fail the test, whose result does not depend on it.
func dropAtCleanup(t testing.TB, driver, dsn, stmt string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		db, err := sql.Open(driver, dsn)
		if err == nil {
			defer db.Close()
			_, err = db.ExecContext(ctx, stmt)
		}
		if err != nil {
			t.Logf("storagetest: %s: %v", stmt, err)
		}
	})
}

// postgresDatabase creates a schema and returns a DSN whose search_path selects it.
func postgresDatabase(ctx context.Context, t testing.TB, dsn string) string {
	t.Helper()
	schema := uniqueName(t)
	admin(ctx, t, "pgx", dsn, "CREATE SCHEMA "+schema)
	dropAtCleanup(t, "pgx", dsn, "DROP SCHEMA "+schema+" CASCADE")
	if !strings.HasPrefix(dsn, "postgres://") && !strings.HasPrefix(dsn, "postgresql://") {
		return dsn + " search_path=" + schema // the key=value form
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("storagetest: %s: %v", postgresEnv, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// mysqlDatabase creates a database and returns a DSN that selects it. parseTime lets a plain
// database/sql pool scan DATETIME columns (goose's version table) into time.Time.
func mysqlDatabase(ctx context.Context, t testing.TB, dsn string) string {
	t.Helper()
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		t.Fatalf("storagetest: %s: %v", mysqlEnv, err)
	}
	name := uniqueName(t)
	admin(ctx, t, "mysql", dsn, "CREATE DATABASE "+name+" CHARACTER SET utf8mb4 COLLATE utf8mb4_bin")
	dropAtCleanup(t, "mysql", dsn, "DROP DATABASE "+name)
	cfg.DBName, cfg.ParseTime = name, true
	return cfg.FormatDSN()
}
