package storagetest

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/agentcards/agentcards/storage/storagetest/privatepg"
)

// TestPrivatePair: a row committed on the primary of a synchronous pair is on the standby
// once promoted, and a pool over the pair's DSN writes to the standby after the promotion,
// having refused it (read-only) before.
func TestPrivatePair(t *testing.T) {
	p := StartPrivatePair(t, privatepg.PairOptions{Sync: true, Slot: true})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, err := sql.Open("pgx", p.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "CREATE TABLE kept (n int); INSERT INTO kept VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	if err := p.Primary.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "INSERT INTO kept VALUES (2)"); err == nil {
		t.Fatal("a write succeeded with the primary stopped and the standby not promoted")
	}
	if err := p.Standby.Promote(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "INSERT INTO kept VALUES (3)"); err != nil {
		t.Fatalf("a write after the promotion: %v", err)
	}
	var n int
	if err := db.QueryRowContext(ctx, "SELECT sum(n) FROM kept").Scan(&n); err != nil || n != 4 {
		t.Fatalf("sum %d (%v), want 4: rows 1 and 3", n, err)
	}
}
