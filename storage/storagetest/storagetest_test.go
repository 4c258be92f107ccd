package storagetest

import (
	"context"
	"database/sql"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// recorder is a testing.TB that records how a helper ended the test instead of ending it.
type recorder struct {
	testing.TB
	ended string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.ended = "fail: " + fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (r *recorder) Skipf(format string, args ...any) {
	r.ended = "skip: " + fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// serverDSN calls ServerDSN on a goroutine of its own, so that ending the "test" ends only it.
func serverDSN(t *testing.T, dialect string) (dsn, ended string) {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		dsn = ServerDSN(r, dialect)
	}()
	<-done
	return dsn, r.ended
}

// TestServerDSNRule checks the package comment's rule: skip locally, fail in CI, run when set.
func TestServerDSNRule(t *testing.T) {
	t.Setenv(postgresEnv, "")
	t.Setenv("CI", "")
	if _, ended := serverDSN(t, "postgres"); !strings.HasPrefix(ended, "skip: ") || !strings.Contains(ended, postgresEnv) {
		t.Errorf("unset, not in CI: %q, want a skip naming %s", ended, postgresEnv)
	}
	t.Setenv("CI", "true")
	if _, ended := serverDSN(t, "postgres"); !strings.HasPrefix(ended, "fail: ") {
		t.Errorf("unset in CI: %q, want a failure", ended)
	}
	t.Setenv(postgresEnv, "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=5")
	if _, ended := serverDSN(t, "postgres"); !strings.HasPrefix(ended, "fail: ") || !strings.Contains(ended, "does not answer") {
		t.Errorf("set to a server that does not answer: %q, want a failure", ended)
	}
	if dsn, ended := serverDSN(t, "sqlite"); dsn != "" || ended != "" {
		t.Errorf("sqlite: %q %q, want no server and no verdict", dsn, ended)
	}
	if _, ended := serverDSN(t, "oracle"); !strings.HasPrefix(ended, "fail: ") {
		t.Errorf("unknown dialect: %q, want a failure", ended)
	}
}

// TestEmptyAndOpen: EmptyDatabase has no tables, not even goose's; Open's database is migrated.
func TestEmptyAndOpen(t *testing.T) {
	ForEachDialect(t, func(t *testing.T, dialect string) {
		ctx := context.Background()
		driver, dsn := EmptyDatabase(t, dialect)
		db, err := sql.Open(driver, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := db.PingContext(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, "SELECT 1 FROM goose_db_version"); err == nil {
			t.Error("the empty database has a version table")
		}
		var n int
		if err := Open(t, dialect).SQL().QueryRowContext(ctx, "SELECT COUNT(*) FROM goose_db_version").Scan(&n); err != nil || n == 0 {
			t.Errorf("Open's database is not migrated: %d versions, %v", n, err)
		}
	})
}
