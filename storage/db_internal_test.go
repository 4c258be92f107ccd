package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"gorm.io/gorm"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards/search"
)

func TestSQLiteDSN(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "nested", "db", "a.db")
	got, mem, err := sqliteDSN(path + "?_busy_timeout=100")
	if err != nil || mem {
		t.Fatalf("sqliteDSN = %q, %v, %v", got, mem, err)
	}
	if _, err := os.Stat(filepath.Dir(path)); err != nil {
		t.Errorf("the directory was not created: %v", err)
	}
	file, query, _ := strings.Cut(got, "?")
	q, _ := url.ParseQuery(query)
	if file != path || q.Get("_busy_timeout") != "100" || len(q["_busy_timeout"]) != 1 {
		t.Errorf("a parameter the caller set was changed: %q", got)
	}
	for _, p := range sqliteParams {
		if p[0] != "_busy_timeout" && q.Get(p[0]) != p[1] {
			t.Errorf("%s missing from %q", p[0], got)
		}
	}

	uri := "file:" + filepath.Join(dir, "other", "b.db") + "?cache=private"
	got, _, err = sqliteDSN(uri)
	if err != nil || !strings.HasPrefix(got, uri+"&_journal_mode=WAL&") {
		t.Errorf("sqliteDSN(%q) = %q, %v", uri, got, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "other")); err != nil {
		t.Errorf("the directory of a file: URI was not created: %v", err)
	}
	if _, mem, _ := sqliteDSN(":memory:"); !mem {
		t.Error(":memory: not recognised")
	}
}

func TestMySQLDSN(t *testing.T) {
	got, err := mysqlDSN("u:p@tcp(db:3306)/app?loc=Local&parseTime=false&charset=latin1&timeout=5s")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := gomysql.ParseDSN(got)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.ParseTime || cfg.Loc != time.UTC || !strings.Contains(got, "charset=utf8mb4") ||
		cfg.DBName != "app" || cfg.Timeout != 5*time.Second {
		t.Errorf("mysqlDSN = %q", got)
	}
}

// TestGroupedWritePanicFailsOnlyItsBatch: a write that panics fails with an error, and the
// group-commit loop goes on serving later writes.
func TestGroupedWritePanicFailsOnlyItsBatch(t *testing.T) {
	db, err := Open(context.Background(), "sqlite", filepath.Join(t.TempDir(), "g.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.grouped(context.Background(), func(*gorm.DB) error { panic("boom") }); err == nil {
		t.Fatal("a panicking write reported success")
	}
	ran := false
	if err := db.grouped(context.Background(), func(tx *gorm.DB) error { ran = true; return tx.Exec("SELECT 1").Error }); err != nil || !ran {
		t.Fatalf("the next write: ran %v, %v", ran, err)
	}
}

// TestGroupedWritesUsePreparedStatements: inside a grouped write on SQLite, tx is a
// database/sql transaction, so prepared.exec reuses the prepared statement instead of falling
// back to GORM.
func TestGroupedWritesUsePreparedStatements(t *testing.T) {
	db, err := Open(context.Background(), "sqlite", filepath.Join(t.TempDir(), "g.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.writer.Exec("CREATE TABLE t (v INTEGER)").Error; err != nil {
		t.Fatal(err)
	}
	insert := db.prepare("INSERT INTO t (v) VALUES (?)")
	for i := range 3 {
		err := db.grouped(context.Background(), func(tx *gorm.DB) error {
			if _, ok := tx.Statement.ConnPool.(*sql.Tx); !ok {
				t.Errorf("grouped write runs on %T, not a *sql.Tx", tx.Statement.ConnPool)
			}
			_, err := insert.exec(tx, i)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	var n int64
	if err := db.gorm.Raw("SELECT COUNT(*) FROM t").Scan(&n).Error; err != nil || n != 3 {
		t.Fatalf("%d rows, %v", n, err)
	}
	// A statement first used inside a transaction is prepared in the background (prepared.go):
	// wait for it, as a later write would find it.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if p, ok := db.stmts.Load("INSERT INTO t (v) VALUES (?)"); ok && p.(*prepared).write.Load() != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the statement was not prepared")
		}
	}
}

// TestGroupedWriteFailsAlone: on SQLite a write that fails after changing rows, sharing its
// transaction with others, is undone alone (its savepoint rolled back) while the others commit.
func TestGroupedWriteFailsAlone(t *testing.T) {
	db, err := Open(context.Background(), "sqlite", filepath.Join(t.TempDir(), "g.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.writer.Exec("CREATE TABLE t (v INTEGER)").Error; err != nil {
		t.Fatal(err)
	}
	refused := errors.New("refused after writing")
	release := HoldGroupCommit(t, db)
	errs := make(chan error, 3)
	for i := range 3 {
		go func() {
			errs <- db.transact(context.Background(), func(tx *gorm.DB) error {
				if err := tx.Exec("INSERT INTO t (v) VALUES (?)", i).Error; err != nil {
					return err
				}
				if i == 1 {
					return refused
				}
				return tx.Exec("INSERT INTO t (v) VALUES (?)", 10+i).Error
			})
		}()
		for deadline := time.Now().Add(10 * time.Second); QueuedGroupWrites(db) != i+1; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the write did not queue")
			}
		}
	}
	release()
	failed := 0
	for range 3 {
		switch err := <-errs; {
		case errors.Is(err, refused):
			failed++
		case err != nil:
			t.Errorf("a write beside the refused one: %v", err)
		}
	}
	var got []int
	if err := db.gorm.Raw("SELECT v FROM t ORDER BY v").Scan(&got).Error; err != nil {
		t.Fatal(err)
	}
	if failed != 1 || fmt.Sprint(got) != "[0 2 10 12]" {
		t.Errorf("%d refused, rows %v; want 1 refused and [0 2 10 12]", failed, got)
	}
}

// TestNotified: a notification's payload is read for the deployment's own schema only, with the
// entry when it names one whole; a payload whose entry does not parse names the tenant only.
func TestNotified(t *testing.T) {
	for _, c := range []struct {
		payload string
		want    search.Notice
		ok      bool
	}{
		{"app acme 42 update 3 agt 1", search.Notice{Tenant: "acme", Change: search.Change{Seq: 42, Op: "update", Revision: 3, AgentID: "agt 1"}}, true},
		{"app acme", search.Notice{Tenant: "acme"}, true},
		{"other acme 42 update 3 agt", search.Notice{}, false},
		{"app acme x update 3 agt", search.Notice{Tenant: "acme"}, true},
		{"app acme -3 update 3 agt", search.Notice{Tenant: "acme"}, true},
		{"app acme 42", search.Notice{Tenant: "acme"}, true},
		{"app", search.Notice{}, false},
	} {
		if got, ok := notified(c.payload, "app"); got != c.want || ok != c.ok {
			t.Errorf("notified(%q) = %+v, %v; want %+v, %v", c.payload, got, ok, c.want, c.ok)
		}
	}
}

// A write that deadlocks is run again; one that deadlocks on every try fails as a conflict, with
// the server's error kept behind it.
func TestRetryDeadlocks(t *testing.T) {
	deadlock := &gomysql.MySQLError{Number: 1213, Message: "Deadlock found when trying to get lock; try restarting transaction"}
	calls := 0
	err := retryDeadlocks(context.Background(), func() error {
		calls++
		if calls == 1 {
			return fmt.Errorf("read card %q: %w", "a", deadlock)
		}
		return nil
	})
	if err != nil || calls != 2 {
		t.Fatalf("a write that deadlocked once: %v after %d calls", err, calls)
	}
	calls = 0
	err = retryDeadlocks(context.Background(), func() error { calls++; return deadlock })
	if !errors.Is(err, fault.Conflict) || !errors.Is(err, deadlock) || calls != 4 {
		t.Fatalf("a write that always deadlocks: %v after %d calls, want a conflict after 4", err, calls)
	}
	calls = 0
	other := errors.New("another failure")
	if err := retryDeadlocks(context.Background(), func() error { calls++; return other }); err != other || calls != 1 {
		t.Fatalf("another failure: %v after %d calls", err, calls)
	}
}
