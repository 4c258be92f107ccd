// Package migrations holds the database schema as goose SQL files, one directory per dialect, and
// applies them. The schema changes only here, for all three dialects at once; nothing calls
// GORM's AutoMigrate.
package migrations

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"hash/fnv"
	"io/fs"
	"path"
	"time"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

//go:embed sqlite/*.sql postgres/*.sql mysql/*.sql
var files embed.FS

// The dialects this package has migrations for; the same names storage.Open accepts.
const (
	SQLite   = "sqlite"
	Postgres = "postgres"
	MySQL    = "mysql"
)

// lockWait bounds how long a replica waits for another one to finish migrating.
const lockWait = 5 * time.Minute

// State is one migration and whether the database has it, as Status reports it.
type State struct {
	Version   int64
	Name      string
	Applied   bool
	AppliedAt time.Time
}

// Up applies every pending migration of dialect to db. Replicas that start at the same time
// against one Postgres or MySQL database take a database lock first, so each migration runs once.
func Up(ctx context.Context, db *sql.DB, dialect string) error {
	p, err := provider(ctx, db, dialect)
	if err != nil {
		return err
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrate %s: %w", dialect, err)
	}
	return nil
}

// UpTo applies the pending migrations of dialect up to and including version.
func UpTo(ctx context.Context, db *sql.DB, dialect string, version int64) error {
	p, err := provider(ctx, db, dialect)
	if err != nil {
		return err
	}
	if _, err := p.UpTo(ctx, version); err != nil {
		return fmt.Errorf("migrate %s to %d: %w", dialect, version, err)
	}
	return nil
}

// Status lists every known migration of dialect in version order and whether db has applied it.
// Like Up, it creates goose's version table if the database has none yet.
func Status(ctx context.Context, db *sql.DB, dialect string) ([]State, error) {
	p, err := provider(ctx, db, dialect)
	if err != nil {
		return nil, err
	}
	list, err := p.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("migration status %s: %w", dialect, err)
	}
	out := make([]State, 0, len(list))
	for _, s := range list {
		st := State{Version: s.Source.Version, Name: path.Base(s.Source.Path), Applied: s.State == goose.StateApplied}
		if s.Source.Path == "" {
			st.Name = fmt.Sprintf("%04d (Go)", s.Source.Version)
		}
		if st.Applied {
			st.AppliedAt = s.AppliedAt.UTC()
		}
		out = append(out, st)
	}
	return out, nil
}

// provider builds a goose provider over the dialect's embedded files, with the dialect's lock.
func provider(ctx context.Context, db *sql.DB, dialect string) (*goose.Provider, error) {
	var gd goose.Dialect
	var locker lock.SessionLocker
	switch dialect {
	case SQLite:
		// No lock: one process owns a SQLite file, and the connection's _txlock=immediate
		// serialises migration transactions anyway.
		gd = goose.DialectSQLite3
	case Postgres:
		gd = goose.DialectPostgres
		id, err := postgresLockID(ctx, db)
		if err != nil {
			return nil, err
		}
		// goose polls pg_try_advisory_lock; once a second keeps a waiting replica's delay short.
		locker, err = lock.NewPostgresSessionLocker(
			lock.WithLockID(id),
			lock.WithLockTimeout(1, uint64(lockWait/time.Second)),
			lock.WithUnlockTimeout(1, 60),
		)
		if err != nil {
			return nil, err
		}
	case MySQL:
		gd = goose.DialectMySQL
		l, err := newMySQLLocker(ctx, db, lockWait)
		if err != nil {
			return nil, err
		}
		locker = l
	default:
		return nil, fmt.Errorf("migrations: unknown dialect %q (want sqlite, postgres or mysql)", dialect)
	}
	sub, err := fs.Sub(files, dialect)
	if err != nil {
		return nil, err
	}
	opts := []goose.ProviderOption{goose.WithDisableGlobalRegistry(true), goose.WithGoMigrations(goMigrations(dialect)...)}
	if locker != nil {
		opts = append(opts, goose.WithSessionLocker(locker))
	}
	p, err := goose.NewProvider(gd, db, sub, opts...)
	if err != nil {
		return nil, fmt.Errorf("migrations %s: %w", dialect, err)
	}
	// Create goose's version table under the lock before anything else. Provider.Up first calls
	// HasPending, which creates the table *without* taking the lock; on MySQL, where DDL commits
	// at once, another replica can then see the table before its zero-version row exists and fail
	// with "missing zero version migration". GetDBVersion takes the lock, and the provider creates
	// the table only once, so the later unlocked call finds it complete.
	if _, err := p.GetDBVersion(ctx); err != nil {
		return nil, fmt.Errorf("migrations %s: version table: %w", dialect, err)
	}
	return p, nil
}

// postgresLockID derives the advisory lock id from the database and schema being migrated.
// Advisory locks are cluster-wide while migrations are per schema: a per-schema id lets separate
// schemas (tests, several environments on one server) migrate in parallel, while replicas of one
// deployment, which share database and search_path, still exclude each other.
func postgresLockID(ctx context.Context, db *sql.DB) (int64, error) {
	var target string
	if err := db.QueryRowContext(ctx, `SELECT current_database() || '.' || coalesce(current_schema(), '')`).Scan(&target); err != nil {
		return 0, fmt.Errorf("migrations: find the schema to lock: %w", err)
	}
	h := fnv.New64a()
	h.Write([]byte("agentcards_migrate:" + target))
	return int64(h.Sum64()), nil
}
