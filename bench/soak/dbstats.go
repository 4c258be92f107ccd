package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"slices"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
)

// tableStats is what pg_stat_user_tables counts of one table of the run's schema, with its size.
type tableStats struct {
	live, dead, ins, upd, hot, del float64
	seqScans, seqRead, idxScans    float64
	vacuums                        float64 // manual and automatic
	// tableBytes is the table with its TOAST table and maps, indexBytes its indexes.
	tableBytes, indexBytes float64
}

// pgWatch reads the Postgres statistics of the run's schema, to say what the run cost the
// database: the share of updates that were HOT, the dead rows left, the scans, the growth.
type pgWatch struct {
	db *sql.DB
	// autovacuum is the server's setting, as SHOW says it.
	autovacuum string
	first      map[string]tableStats
	firstAt    time.Time
	last       map[string]tableStats
	lastAt     time.Time
}

// newPGWatch connects to the run's schema (dsn has its search_path).
func newPGWatch(ctx context.Context, dsn string) (*pgWatch, error) {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	w := &pgWatch{db: db}
	if err := db.QueryRowContext(ctx, "SHOW autovacuum").Scan(&w.autovacuum); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("database statistics: %w", err)
	}
	return w, nil
}

func (w *pgWatch) close() { _ = w.db.Close() }

// read takes the statistics of every table of the schema. They lag the server's work by up to a
// second while it is busy (each connection reports at most once a second).
func (w *pgWatch) read() (map[string]tableStats, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rows, err := w.db.QueryContext(ctx, `SELECT relname, n_live_tup, n_dead_tup, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del,
 coalesce(seq_scan, 0), coalesce(seq_tup_read, 0), coalesce(idx_scan, 0), vacuum_count + autovacuum_count,
 pg_total_relation_size(relid) - pg_indexes_size(relid), pg_indexes_size(relid)
 FROM pg_stat_user_tables WHERE schemaname = current_schema()`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]tableStats{}
	for rows.Next() {
		var name string
		var s tableStats
		if err := rows.Scan(&name, &s.live, &s.dead, &s.ins, &s.upd, &s.hot, &s.del, &s.seqScans, &s.seqRead, &s.idxScans,
			&s.vacuums, &s.tableBytes, &s.indexBytes); err != nil {
			return nil, err
		}
		out[name] = s
	}
	return out, rows.Err()
}

// mark takes the statistics at a sample: the first under load and the last one. A failure is
// said, and leaves the report without that end.
func (w *pgWatch) mark(first bool) {
	st, err := w.read()
	if err != nil {
		progress("database statistics: %v", err)
		return
	}
	if first {
		w.first, w.firstAt = st, time.Now()
	} else {
		w.last, w.lastAt = st, time.Now()
	}
}

// report prints, for each table the run wrote or scanned, what happened to it between the two
// marks: updates and the share that was HOT (updated in place, no index written, its dead
// version pruned from the page without vacuum), dead rows left per update and delete and per
// minute, sequential scans, vacuums, and the growth of the table and its indexes.
func (w *pgWatch) report(out io.Writer) {
	if w.first == nil || w.last == nil {
		return
	}
	mins := w.lastAt.Sub(w.firstAt).Minutes()
	fmt.Fprintf(out, "\ndatabase: the run's tables over %s under load (pg_stat_user_tables; autovacuum %s).\n",
		w.lastAt.Sub(w.firstAt).Round(time.Second), w.autovacuum)
	fmt.Fprintln(out, "HOT: updates made in place; dead: change of n_dead_tup (vacuum lowers it), per update and delete, and per minute.")
	fmt.Fprintf(out, "%-22s %9s %6s %9s %8s %9s %9s %9s %8s %7s %15s %15s\n", "table", "updates", "HOT %", "deletes", "dead now", "dead/upd", "dead/min",
		"seq scans", "rows/seq", "vacuums", "table MiB", "indexes MiB")
	names := make([]string, 0, len(w.last))
	for name := range w.last {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		a, b := w.first[name], w.last[name]
		upd, hot, del := b.upd-a.upd, b.hot-a.hot, b.del-a.del
		seq := b.seqScans - a.seqScans
		if upd+del+b.ins-a.ins+seq == 0 {
			continue
		}
		dead := b.dead - a.dead
		fmt.Fprintf(out, "%-22s %9.0f %6s %9.0f %8.0f %9s %9.0f %9.0f %8s %7.0f %15s %15s\n", name, upd, ratio(100*hot, upd, 1), del, b.dead,
			ratio(dead, upd+del, 2), dead/mins, seq, ratio(b.seqRead-a.seqRead, seq, 0), b.vacuums-a.vacuums,
			growth(a.tableBytes, b.tableBytes), growth(a.indexBytes, b.indexBytes))
	}
}

// ratio is a/b with prec decimals, "-" when b is 0.
func ratio(a, b float64, prec int) string {
	if b == 0 {
		return "-"
	}
	return num(a/b, prec)
}

// growth is "from→to" in MiB.
func growth(from, to float64) string {
	return num(from/mib, 1) + "→" + num(to/mib, 1)
}
