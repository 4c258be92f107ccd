package storage

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestSQLiteCheckpointsInBackground: the writing connection leaves checkpoints to the background
// connection, which copies the log into the database file without any write waiting for it.
func TestSQLiteCheckpointsInBackground(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "a.db")
	db, err := Open(ctx, "sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var pages int
	if err := db.wsql.QueryRowContext(ctx, "PRAGMA wal_autocheckpoint").Scan(&pages); err != nil || pages != writerCheckpointPages {
		t.Fatalf("the writer checkpoints at %d pages (%v), want %d", pages, err, writerCheckpointPages)
	}
	if _, err := db.wsql.ExecContext(ctx, "CREATE TABLE filler (b BLOB)"); err != nil {
		t.Fatal(err)
	}
	before := fileSize(t, path)
	// About 8 MiB in 64 commits: well past SQLite's own 1,000-page checkpoint, far below the
	// writer's. Only a checkpoint moves pages from the log into the file.
	row := bytes.Repeat([]byte{'x'}, 8<<10)
	for range 64 {
		tx, err := db.wsql.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for range 16 {
			if _, err := tx.ExecContext(ctx, "INSERT INTO filler VALUES (?)", row); err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for fileSize(t, path) < before+6<<20 {
		if time.Now().After(deadline) {
			t.Fatalf("the database file is %d bytes (%d before the writes): no checkpoint copied the log", fileSize(t, path), before)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.checkpoints.conn.PingContext(ctx); err == nil {
		t.Error("Close left the checkpoint connection open")
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}
