package storage

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/agentcards/agentcards/cards/liveness"
)

// The log of liveness writes (card_liveness_writes, migration 16) says which records each write
// touched, so that Since finds them through the log's index on written_at rather than through an
// index on card_liveness.updated_at, which would make every heartbeat a non-HOT update on
// Postgres (see the migration).
const (
	// writesKeep is how long the log keeps an entry; the writers delete older ones.
	writesKeep = 10 * time.Minute
	// writesSkew is how far the clocks of the replica that deletes entries and of the one that
	// reads may differ: Since reads the log for a window that starts at most writesKeep less
	// writesSkew ago, and card_liveness itself for an older one.
	writesSkew = time.Minute
	// writesPruneEvery is how often one store deletes the entries past writesKeep, at most.
	writesPruneEvery = time.Minute
	// idsPerWrite bounds the agent ids of one entry (each at most 128 characters).
	idsPerWrite = 200
	// recordsPerRead bounds the agent ids of one read of card_liveness by key: a few hundred
	// keys of a large table are read through the primary key, where a thousand make Postgres
	// scan the table.
	recordsPerRead = 200
)

// farFuture is how far past a window's start its end is put (and before the end of the entries
// to delete, their start): that bound excludes nothing, but a planner that has no statistics of
// the column (a table never analysed, as on a server without autovacuum) estimates a closed
// range as narrow and reads it through the index, where it takes an open one (>= or < alone) for
// a third of the table and reads all of it.
const farFuture = 100 * 365 * 24 * time.Hour

// written is one record write, as the log keeps it.
type written struct {
	tenant, agentID string
	at              time.Time
}

// logWrites appends the writes to the log in tx: one entry per tenant and time written (a batch
// of heartbeats or of probe results shares its time), of at most idsPerWrite agent ids.
func logWrites(tx *gorm.DB, ws []written) error {
	type group struct {
		tenant string
		at     time.Time
	}
	byGroup := map[group][]string{}
	for _, w := range ws {
		g := group{w.tenant, utc(w.at)}
		byGroup[g] = append(byGroup[g], w.agentID)
	}
	groups := slices.SortedFunc(maps.Keys(byGroup), func(a, b group) int {
		return cmp.Or(a.at.Compare(b.at), strings.Compare(a.tenant, b.tenant))
	})
	var args []any
	for _, g := range groups {
		ids := slices.Compact(slices.Sorted(slices.Values(byGroup[g])))
		for part := range slices.Chunk(ids, idsPerWrite) {
			doc, err := json.Marshal(part)
			if err != nil {
				return err
			}
			args = append(args, g.at, g.tenant, string(doc))
		}
	}
	for len(args) > 0 {
		n := min(len(args)/3, beatsPerStatement)
		q := "INSERT INTO card_liveness_writes (written_at, tenant_id, agent_ids) VALUES (?, ?, ?)" + strings.Repeat(", (?, ?, ?)", n-1)
		if err := tx.Exec(q, args[:3*n]...).Error; err != nil {
			return fmt.Errorf("log liveness writes: %w", err)
		}
		args = args[3*n:]
	}
	return nil
}

// Since reads the records of every tenant written at or after t: those the log lists since t,
// read by key, unless t is older than the log keeps, when it reads card_liveness whole. Rows that
// a probe claim adds (see Claim) are not logged: they hold no liveness, only the card they are of.
func (s *LivenessStore) Since(ctx context.Context, t time.Time) ([]liveness.Record, error) {
	from := utc(t)
	if from.Before(s.now().Add(-(writesKeep - writesSkew))) {
		return s.query(ctx, "SELECT "+livenessColumns+" FROM card_liveness WHERE updated_at >= ?", from)
	}
	rows, err := s.db.with(ctx).Raw("SELECT tenant_id, agent_ids FROM card_liveness_writes WHERE written_at >= ? AND written_at < ?",
		from, from.Add(farFuture)).Rows()
	if err != nil {
		return nil, fmt.Errorf("read liveness writes: %w", err)
	}
	byTenant := map[string]map[string]bool{}
	for rows.Next() {
		var tenant, doc string
		if err := rows.Scan(&tenant, &doc); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read liveness writes: %w", err)
		}
		var ids []string
		if err := json.Unmarshal([]byte(doc), &ids); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read liveness writes: %w", err)
		}
		if byTenant[tenant] == nil {
			byTenant[tenant] = map[string]bool{}
		}
		for _, id := range ids {
			byTenant[tenant][id] = true
		}
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return nil, fmt.Errorf("read liveness writes: %w", err)
	}
	var out []liveness.Record
	for _, tenant := range slices.Sorted(maps.Keys(byTenant)) {
		ids := slices.Sorted(maps.Keys(byTenant[tenant]))
		for part := range slices.Chunk(ids, recordsPerRead) {
			// The record as it is now, if it was still written at or after t (a write since,
			// stamped by a clock behind, may have put it before).
			recs, err := s.query(ctx, "SELECT "+livenessColumns+" FROM card_liveness WHERE tenant_id = ? AND agent_id IN ? AND updated_at >= ?",
				tenant, part, from)
			if err != nil {
				return nil, err
			}
			out = append(out, recs...)
		}
	}
	return out, nil
}

// pruneWrites deletes the log's entries older than writesKeep, once every writesPruneEvery at
// most. A failure is left to the next time: the entries only take room meanwhile.
func (s *LivenessStore) pruneWrites(ctx context.Context) {
	now := s.now()
	last := s.prunedAt.Load()
	if now.UnixNano()-last < int64(writesPruneEvery) || !s.prunedAt.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	end := utc(now.Add(-writesKeep))
	err := s.db.writing(ctx).Exec("DELETE FROM card_liveness_writes WHERE written_at >= ? AND written_at < ?", end.Add(-farFuture), end).Error
	if err != nil {
		s.prunedAt.CompareAndSwap(now.UnixNano(), last)
	}
}

// now is the database's clock, as the card writes take it.
func (s *LivenessStore) now() time.Time { return s.db.writer.NowFunc() }
