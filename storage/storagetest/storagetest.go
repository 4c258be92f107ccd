// Package storagetest gives tests a fresh, migrated database of each dialect: SQLite in a
// temporary directory, a new schema on the Postgres server named by AGENTCARDS_TEST_POSTGRES_DSN,
// a new database on the MySQL server named by AGENTCARDS_TEST_MYSQL_DSN. Storage and web tests
// share it, so every dialect is tested against a real server, never a mock.
package storagetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver, for the admin connection

	"github.com/agentcards/agentcards/storage"
)

// The environment variables that name the test servers; see the package comment.
const (
	postgresEnv = "AGENTCARDS_TEST_POSTGRES_DSN"
	mysqlEnv    = "AGENTCARDS_TEST_MYSQL_DSN"
)

// Dialects lists every dialect the stores support; run each case once per dialect.
func Dialects() []string { return []string{"sqlite", "postgres", "mysql"} }

// Open returns a freshly migrated database of dialect that no other call shares, closed and
// dropped when the test ends. Without the server's DSN in the environment it skips the test,
// unless CI is set: there a missing server is a failure, never a silent skip.
func Open(t testing.TB, dialect string) *storage.DB {
	t.Helper()
	return OpenShared(t, dialect, 1)[0]
}

// OpenShared is Open with n separate connection pools on the same fresh database, as n replicas
// of the service would have.
func OpenShared(t testing.TB, dialect string, n int) []*storage.DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var dsn string
	switch dialect {
	case "sqlite":
		dsn = filepath.Join(t.TempDir(), "agentcards.db")
	case "postgres":
		dsn = postgresDatabase(ctx, t, serverDSN(t, postgresEnv))
	case "mysql":
		dsn = mysqlDatabase(ctx, t, serverDSN(t, mysqlEnv))
	default:
		t.Fatalf("storagetest: unknown dialect %q", dialect)
	}
	dbs := make([]*storage.DB, n)
	for i := range dbs {
		db, err := storage.Open(ctx, dialect, dsn)
		if err != nil {
			t.Fatalf("storagetest: %v", err)
		}
		t.Cleanup(func() { _ = db.Close() })
		dbs[i] = db
	}
	if err := dbs[0].Migrate(ctx); err != nil {
		t.Fatalf("storagetest: %v", err)
	}
	return dbs
}

// serverDSN reads the server's DSN from env, or ends the test: skip locally, fail in CI.
func serverDSN(t testing.TB, env string) string {
	t.Helper()
	dsn := os.Getenv(env)
	if dsn != "" {
		return dsn
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("storagetest: %s is not set; CI must test against a real server", env)
	}
	t.Skipf("storagetest: %s is not set; set it to run this test against a real server", env)
	return ""
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

// drop removes a test schema or database; a failure is reported but does not fail the test.
func drop(ctx context.Context, t testing.TB, driver, dsn, stmt string) {
	db, err := sql.Open(driver, dsn)
	if err == nil {
		defer db.Close()
		_, err = db.ExecContext(ctx, stmt)
	}
	if err != nil {
		t.Logf("storagetest: %s: %v", stmt, err)
	}
}

// postgresDatabase creates a schema and returns a DSN whose search_path selects it.
func postgresDatabase(ctx context.Context, t testing.TB, dsn string) string {
	t.Helper()
	schema := uniqueName(t)
	admin(ctx, t, "pgx", dsn, "CREATE SCHEMA "+schema)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		drop(ctx, t, "pgx", dsn, "DROP SCHEMA "+schema+" CASCADE")
	})
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatalf("storagetest: %s: %v", postgresEnv, err)
		}
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		return u.String()
	}
	return dsn + " search_path=" + schema
}

// mysqlDatabase creates a database and returns a DSN that selects it.
func mysqlDatabase(ctx context.Context, t testing.TB, dsn string) string {
	t.Helper()
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		t.Fatalf("storagetest: %s: %v", mysqlEnv, err)
	}
	name := uniqueName(t)
	admin(ctx, t, "mysql", dsn, fmt.Sprintf("CREATE DATABASE %s CHARACTER SET utf8mb4 COLLATE utf8mb4_bin", name))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		drop(ctx, t, "mysql", dsn, "DROP DATABASE "+name)
	})
	cfg.DBName = name
	return cfg.FormatDSN()
}
