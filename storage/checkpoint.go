package storage

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	sqlite3 "github.com/mattn/go-sqlite3"
)

// SQLite copies the pages of its write-ahead log back into the database file at checkpoints,
// syncing the log before and the file after. Left to itself it does this inside the commit that
// takes the log past 1,000 pages, so every few dozen writes one of them also waits for a copy and
// two syncs (a third of the time of single-card registration here). A file database therefore
// checkpoints from a connection of its own, in the background, and the writing connection only
// when the log has grown far beyond that (if the background falls behind or stops).
const (
	// checkpointEvery is the background checkpointer's period. A checkpoint with nothing new in
	// the log returns without touching the disk, so an idle database costs nothing.
	checkpointEvery = 100 * time.Millisecond
	// writerCheckpointPages is the log size, in pages, at which the writing connection
	// checkpoints by itself (SQLite's default is 1,000). At a few thousand writes a second the
	// log gains a few thousand pages per period, well below it.
	writerCheckpointPages = 20000
)

// writerDriver is the driver name of SQLite's writing connection: its hook raises the log size
// at which the connection checkpoints (a PRAGMA on each new connection, so one the pool opens
// again has it too).
const writerDriver = "sqlite3_agentcards_writer"

func init() {
	sql.Register(writerDriver, &sqlite3.SQLiteDriver{
		ConnectHook: func(c *sqlite3.SQLiteConn) error {
			_, err := c.Exec(fmt.Sprintf("PRAGMA wal_autocheckpoint = %d", writerCheckpointPages), nil)
			return err
		},
	})
}

// checkpointer runs passive checkpoints of a SQLite file on its own connection until stopped.
// A passive checkpoint takes no lock that writers or readers wait for: it copies what no reader
// still needs and leaves the rest to the next one.
type checkpointer struct {
	conn *sql.DB
	stop context.CancelFunc
	done chan struct{}
}

// startCheckpointer opens a connection to the SQLite database of dsn (as the writer's) and
// checkpoints it every checkpointEvery.
func startCheckpointer(dsn string) (*checkpointer, error) {
	conn, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return nil, fmt.Errorf("storage: open the checkpoint connection: %w", err)
	}
	conn.SetMaxOpenConns(1)
	conn.SetConnMaxLifetime(0)
	ctx, stop := context.WithCancel(context.Background())
	c := &checkpointer{conn: conn, stop: stop, done: make(chan struct{})}
	go c.run(ctx)
	return c, nil
}

func (c *checkpointer) run(ctx context.Context) {
	defer close(c.done)
	tick := time.NewTicker(checkpointEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		// An error (a busy database, a full disk) leaves the log to the next round, or to the
		// writer's own checkpoint past writerCheckpointPages; the writes themselves report it.
		_, _ = c.conn.ExecContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)")
	}
}

// close stops the checkpointer and closes its connection.
func (c *checkpointer) close() error {
	c.stop()
	<-c.done
	return c.conn.Close()
}
