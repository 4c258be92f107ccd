// Package storagetest gives tests a fresh database of each dialect: SQLite in a temporary
// directory, a new schema on the Postgres server named by AGENTCARDS_TEST_POSTGRES_DSN, a new
// database on the MySQL server named by AGENTCARDS_TEST_MYSQL_DSN. Storage, migration and web
// tests share it, so every dialect is tested against a real server, never a mock.
//
// The rule for a server dialect, applied in one place (ServerDSN): when its variable is set the
// test runs, and fails if the server does not answer; when it is unset the test fails if CI is
// set (CI must test against real servers, never skip them silently) and is skipped otherwise.
// SQLite needs no server and always runs.
package storagetest

import (
	"context"
	"testing"
	"time"

	"github.com/agentcards/agentcards/migrations"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/tenants"
)

// Dialects lists every dialect the stores support; run each case once per dialect.
func Dialects() []string { return []string{migrations.SQLite, migrations.Postgres, migrations.MySQL} }

// ForEachDialect runs fn in a subtest named after each dialect, so one test body covers all of
// them and a failure names the dialect.
func ForEachDialect(t *testing.T, fn func(t *testing.T, dialect string)) {
	t.Helper()
	for _, d := range Dialects() {
		t.Run(d, func(t *testing.T) { fn(t, d) })
	}
}

// Open returns a freshly migrated database of dialect that no other call shares, closed and
// dropped when the test ends; a missing server skips or fails the test as the package comment says.
func Open(t testing.TB, dialect string) *storage.DB {
	t.Helper()
	return OpenShared(t, dialect, 1)[0]
}

// OpenShared is Open with n separate connection pools on the same fresh database, as n replicas
// of the service would have.
func OpenShared(t testing.TB, dialect string, n int) []*storage.DB {
	t.Helper()
	_, dsn := EmptyDatabase(t, dialect)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
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

// CreateTenant creates an active tenant named "Tenant <id>" directly in the store, created and
// updated at at, with admins as its first admins: for tests that need a tenant but test
// something else.
func CreateTenant(t testing.TB, db *storage.DB, id tenants.ID, at time.Time, admins ...string) {
	t.Helper()
	tn := tenants.Tenant{ID: id, Name: "Tenant " + string(id), Status: tenants.StatusActive, CreatedAt: at, UpdatedAt: at}
	if err := storage.NewTenantStore(db).Create(context.Background(), tn, admins); err != nil {
		t.Fatalf("storagetest: create tenant %s: %v", id, err)
	}
}
