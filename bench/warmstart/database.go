package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	// also the "mysql" database/sql driver
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
	_ "github.com/mattn/go-sqlite3"    // the "sqlite3" database/sql driver

	"github.com/agentcards/agentcards/bench/internal/scratch"
)

// database is one size's own database (see bench/internal/scratch), with what database/sql
// opens here to read it.
type database struct {
	*scratch.DB
	driver, open string
}

// newDatabase makes the database of one size; server is the Postgres or MySQL server's DSN.
func newDatabase(ctx context.Context, dialect, dir, server string) (*database, error) {
	db, err := scratch.New(ctx, dialect, dir, server, "warmstart")
	if err != nil {
		return nil, err
	}
	d := &database{DB: db, open: db.DSN}
	switch dialect {
	case "sqlite":
		// Read-only and deferred, as the server's read pool: the bench only reads.
		d.driver, d.open = "sqlite3", db.DSN+"?_busy_timeout=5000&_query_only=true&_txlock=deferred"
	case "postgres":
		d.driver = "pgx"
	default:
		d.driver = "mysql"
	}
	return d, nil
}

// connect opens a new pool on the database and makes sure it answers.
func (d *database) connect(ctx context.Context) (*sql.DB, error) {
	db, err := sql.Open(d.driver, d.open)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(2)
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, err
	}
	return db, nil
}

// query is q with Postgres's numbered placeholders in place of ? where the dialect needs them.
func (d *database) query(q string) string {
	if d.Dialect != "postgres" {
		return q
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r != '?' {
			b.WriteRune(r)
			continue
		}
		n++
		b.WriteString("$" + strconv.Itoa(n))
	}
	return b.String()
}

// searchedAt returns the tenant's tenant_activity.searched_at as text ("" when it has no row).
func (d *database) searchedAt(ctx context.Context, db *sql.DB, tenant string) (string, error) {
	var at string
	err := db.QueryRowContext(ctx, d.query("SELECT searched_at FROM tenant_activity WHERE tenant_id = ?"), tenant).Scan(&at)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return at, err
}

// awaitSearched waits until the tenant's searched_at is set and differs from prev (the server
// records a search after answering it, off its path), for up to limit, and returns it. ok is
// false if it did not change in time.
func (d *database) awaitSearched(ctx context.Context, tenant, prev string, limit time.Duration) (at string, ok bool, err error) {
	db, err := d.connect(ctx)
	if err != nil {
		return "", false, err
	}
	defer db.Close()
	deadline := time.Now().Add(limit)
	for {
		at, err := d.searchedAt(ctx, db, tenant)
		if err != nil {
			return "", false, fmt.Errorf("read tenant_activity: %w", err)
		}
		if at != "" && at != prev {
			return at, true, nil
		}
		if time.Now().After(deadline) {
			return at, false, nil
		}
		select {
		case <-ctx.Done():
			return "", false, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// scanCard is what the scan reads of a card document: the fields its match looks at.
type scanCard struct {
	Name         string `json:"name"`
	Description  string `json:"description"`
	Capabilities []struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	} `json:"capabilities"`
}

// matches reports whether word (lower case) is a substring of the card's name, description, or
// a capability's name or description, compared without case.
func (c *scanCard) matches(word string) bool {
	has := func(s string) bool { return strings.Contains(strings.ToLower(s), word) }
	if has(c.Name) || has(c.Description) {
		return true
	}
	for _, cp := range c.Capabilities {
		if has(cp.Name) || has(cp.Description) {
			return true
		}
	}
	return false
}

// scanResult is one SQL scan: how long it took, the cards read and how many matched.
type scanResult struct {
	took           time.Duration
	cards, matched int
}

// scan answers the search as a registry without an index does: on a new pool (connected before
// the clock starts), it selects every card document of the tenant, decodes each and matches the
// word. The decoding keeps only the fields matched, the least a scan can decode.
func (d *database) scan(ctx context.Context, tenant, word string) (scanResult, error) {
	db, err := d.connect(ctx)
	if err != nil {
		return scanResult{}, err
	}
	defer db.Close()
	var r scanResult
	start := time.Now()
	rows, err := db.QueryContext(ctx, d.query("SELECT doc FROM cards WHERE tenant_id = ?"), tenant)
	if err != nil {
		return r, err
	}
	defer rows.Close()
	var doc []byte
	for rows.Next() {
		if err := rows.Scan(&doc); err != nil {
			return r, err
		}
		var c scanCard
		if err := json.Unmarshal(doc, &c); err != nil {
			return r, fmt.Errorf("card document: %w", err)
		}
		r.cards++
		if c.matches(word) {
			r.matched++
		}
	}
	if err := rows.Err(); err != nil {
		return r, err
	}
	r.took = time.Since(start)
	return r, nil
}
