package migrations_test

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

	gomysql "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "github.com/mattn/go-sqlite3"

	"github.com/agentcards/agentcards/migrations"
)

// serverDSN reads a test server's DSN; like storagetest, a missing one fails in CI and skips
// elsewhere. (storagetest cannot be used here: its databases come already migrated.)
func serverDSN(t *testing.T, env string) string {
	t.Helper()
	if dsn := os.Getenv(env); dsn != "" {
		return dsn
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is not set; CI must test against a real server", env)
	}
	t.Skipf("%s is not set; set it to run this test against a real server", env)
	return ""
}

func uniqueName(t *testing.T) string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "agentcards_migtest_" + hex.EncodeToString(b)
}

func exec(t *testing.T, driver, dsn, stmt string) {
	t.Helper()
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(stmt); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
}

// freshDatabase creates an empty schema (postgres) or database (mysql), dropped at the end, and
// returns the driver name and a DSN that selects it.
func freshDatabase(t *testing.T, dialect string) (string, string) {
	t.Helper()
	name := uniqueName(t)
	switch dialect {
	case migrations.SQLite:
		return "sqlite3", "file:" + filepath.Join(t.TempDir(), "m.db") + "?_txlock=immediate&_busy_timeout=5000"
	case migrations.Postgres:
		dsn := serverDSN(t, "AGENTCARDS_TEST_POSTGRES_DSN")
		exec(t, "pgx", dsn, "CREATE SCHEMA "+name)
		t.Cleanup(func() { exec(t, "pgx", dsn, "DROP SCHEMA "+name+" CASCADE") })
		if !strings.Contains(dsn, "://") {
			return "pgx", dsn + " search_path=" + name
		}
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		q.Set("search_path", name)
		u.RawQuery = q.Encode()
		return "pgx", u.String()
	case migrations.MySQL:
		dsn := serverDSN(t, "AGENTCARDS_TEST_MYSQL_DSN")
		exec(t, "mysql", dsn, "CREATE DATABASE "+name+" CHARACTER SET utf8mb4 COLLATE utf8mb4_bin")
		t.Cleanup(func() { exec(t, "mysql", dsn, "DROP DATABASE "+name) })
		cfg, err := gomysql.ParseDSN(dsn)
		if err != nil {
			t.Fatal(err)
		}
		cfg.DBName, cfg.ParseTime = name, true
		return "mysql", cfg.FormatDSN()
	}
	t.Fatalf("unknown dialect %q", dialect)
	return "", ""
}

// TestConcurrentUp starts several "replicas", each with its own pool, migrating one fresh
// database at once: all must succeed and every migration must be recorded exactly once.
func TestConcurrentUp(t *testing.T) {
	for _, dialect := range []string{migrations.SQLite, migrations.Postgres, migrations.MySQL} {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			driver, dsn := freshDatabase(t, dialect)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			replicas := 5
			if dialect == migrations.SQLite {
				replicas = 1 // one process owns a SQLite file
			}
			errs := make([]error, replicas)
			var wg sync.WaitGroup
			for i := range replicas {
				db, err := sql.Open(driver, dsn)
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				wg.Go(func() { errs[i] = migrations.Up(ctx, db, dialect) })
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Errorf("replica %d: %v", i, err)
				}
			}

			db, err := sql.Open(driver, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if err := migrations.Up(ctx, db, dialect); err != nil {
				t.Errorf("Up on an up-to-date database: %v", err)
			}
			var total, distinct int
			err = db.QueryRow(`SELECT COUNT(*), COUNT(DISTINCT version_id) FROM goose_db_version WHERE version_id > 0`).Scan(&total, &distinct)
			if err != nil {
				t.Fatal(err)
			}
			states, err := migrations.Status(ctx, db, dialect)
			if err != nil {
				t.Fatal(err)
			}
			if len(states) == 0 || total != len(states) || distinct != total {
				t.Errorf("version table has %d rows for %d versions; %d migrations known", total, distinct, len(states))
			}
			for _, s := range states {
				if !s.Applied || s.AppliedAt.IsZero() || s.Name == "" {
					t.Errorf("migration %+v not applied", s)
				}
			}
			if states[0].Version != 1 || states[0].Name != "0001_init.sql" {
				t.Errorf("first migration = %+v", states[0])
			}
		})
	}
}

func TestUnknownDialect(t *testing.T) {
	db, err := sql.Open("sqlite3", filepath.Join(t.TempDir(), "x.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := migrations.Up(context.Background(), db, "oracle"); err == nil {
		t.Error("Up accepted an unknown dialect")
	}
}
