package search

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/search/index"
	"github.com/agentcards/agentcards/tenants"
)

// Snapshots keeps each large tenant index on disk (see snapshot.go), one file per tenant in
// Dir, so that after a restart the index is read back and brought up to date instead of built
// from every card. The files are a cache: deleting them costs a build, nothing else.
type Snapshots struct {
	Dir string
	// Versions lists the versions of a tenant's cards in agent id order (storage's CardStore).
	Versions interface {
		Versions(ctx context.Context, tenant tenants.ID) ([]cards.Version, error)
	}
	// Tenants, when set, lists the tenants that exist: the periodic write removes the files of
	// the others (deleted through another replica while this one did not hold their index).
	Tenants func(ctx context.Context) ([]tenants.ID, error)
	Log     *slog.Logger
	// MinCards is the fewest cards a tenant index must hold to be written out (0:
	// snapshotMinCards); a smaller one builds in a few milliseconds.
	MinCards int
}

// snapshotMinCards: an index of fewer cards builds in about as long as its snapshot reads back.
const snapshotMinCards = 1000

func (s *Snapshots) minCards() int {
	if s.MinCards > 0 {
		return s.MinCards
	}
	return snapshotMinCards
}

// path is the tenant's file: its id escaped as a path segment, so any id names a file of Dir.
func (s *Snapshots) path(tenant tenants.ID) string {
	return filepath.Join(s.Dir, url.PathEscape(string(tenant))+".index")
}

func (s *Snapshots) info(msg string, args ...any) {
	if s.Log != nil {
		s.Log.Info(msg, args...)
	}
}

func (s *Snapshots) warn(msg string, args ...any) {
	if s.Log != nil {
		s.Log.Warn(msg, args...)
	}
}

// read reads the tenant's snapshot back; fs.ErrNotExist when there is none.
func (s *Snapshots) read(tenant tenants.ID) (*index.Tenant, error) {
	b, err := os.ReadFile(s.path(tenant))
	if err != nil {
		return nil, err
	}
	return index.Decode(b, string(tenant))
}

// create makes a temporary file of Dir for a snapshot of tenant, which commit puts in place.
func (s *Snapshots) create() (*os.File, error) {
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return nil, err
	}
	return os.CreateTemp(s.Dir, writingPrefix+"*")
}

// commit replaces the tenant's snapshot with f, made by create and written but for an error
// err: synced and renamed over the old one, so a crash leaves the old snapshot or the new one,
// never a part of either. With an error, f is removed, the old snapshot kept, and err returned.
func (s *Snapshots) commit(tenant tenants.ID, f *os.File, err error) error {
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), s.path(tenant))
	}
	if err != nil {
		os.Remove(f.Name())
		return err
	}
	// The rename itself, made durable: else a crash may bring back the snapshot it replaced.
	if d, err := os.Open(s.Dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// Check makes Dir if need be and writes a file there: an error says snapshots cannot be
// written (a read-only disk), which the server reports once, at its start.
func (s *Snapshots) Check() error {
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(s.Dir, writingPrefix+"*")
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(f.Name())
}

// remove deletes the tenant's snapshot, if any.
func (s *Snapshots) remove(tenant tenants.ID) {
	if err := os.Remove(s.path(tenant)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.warn("search index snapshot not removed", "tenant", tenant, "err", err)
	}
}

// sweep removes the snapshots of tenants that are not in exist and not loaded here.
func (ix *Index) sweep(ctx context.Context) error {
	s := ix.Snapshots
	if s.Tenants == nil {
		return nil
	}
	entries, err := os.ReadDir(s.Dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	list, err := s.Tenants(ctx)
	if err != nil {
		return err
	}
	exist := make(map[tenants.ID]bool, len(list))
	for _, t := range list {
		exist[t] = true
	}
	for _, t := range ix.Loaded() {
		exist[t] = true
	}
	for _, de := range entries {
		name, ok := strings.CutSuffix(de.Name(), ".index")
		if !ok {
			continue
		}
		if t, err := url.PathUnescape(name); err == nil && !exist[tenants.ID(t)] {
			ix.saving.Lock()
			s.remove(tenants.ID(t))
			ix.saving.Unlock()
		}
	}
	return nil
}

// forgetSnapshot removes the tenant's snapshot: the tenant was deleted (or created anew), and
// its index e (nil if none was loaded) dropped; a write of e queued after its build is called
// off.
func (ix *Index) forgetSnapshot(tenant tenants.ID, e *indexEntry) {
	if ix.Snapshots == nil {
		return
	}
	ix.saving.Lock()
	defer ix.saving.Unlock()
	if e != nil {
		e.noMoreSaves()
	}
	ix.Snapshots.remove(tenant)
}

// noMoreSaves calls off every write of e's snapshot to come: a queued one, an eviction's (see
// saveLocked). The caller holds ix.saving.
func (e *indexEntry) noMoreSaves() {
	e.saveQueued.Store(false)
	e.dropped.Store(true)
}

// writingPrefix starts the names of snapshots being written.
const writingPrefix = ".writing-"

// Clean removes what writes cut short left behind (a process killed while writing): files of
// Dir being written for more than an hour.
func (s *Snapshots) Clean() {
	entries, err := os.ReadDir(s.Dir)
	if err != nil {
		return
	}
	for _, de := range entries {
		if !strings.HasPrefix(de.Name(), writingPrefix) {
			continue
		}
		if info, err := de.Info(); err == nil && time.Since(info.ModTime()) > time.Hour {
			os.Remove(filepath.Join(s.Dir, de.Name()))
		}
	}
}

// restore reads the tenant's snapshot and brings it to the versions of the cards the database
// holds now: the cards whose version differs (or that are new) are read and indexed again, those
// gone are removed. It returns nil when there is no snapshot that can be used (none, unreadable,
// or so far behind that a build costs less), and whether the index restored is the snapshot as
// written, unchanged.
func (ix *Index) restore(ctx context.Context, tenant tenants.ID) (*index.Tenant, bool, error) {
	s := ix.Snapshots
	if s == nil {
		return nil, false, nil
	}
	start := time.Now()
	x, err := s.read(tenant)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, false, nil
	case err != nil:
		s.warn("search index snapshot not used; the index is built from the cards", "tenant", tenant, "err", err)
		return nil, false, nil
	}
	readTook := time.Since(start)
	vs, err := s.Versions.Versions(cards.WithBatchRead(ctx), tenant)
	if err != nil {
		return nil, false, err
	}
	versionsTook := time.Since(start) - readTook
	gone, again := x.Differences(vs)
	if changed := len(gone) + len(again); changed > max(len(vs), x.Live())/2 {
		s.info("search index snapshot not used: most cards changed since; the index is built from the cards", "tenant", tenant, "changed", changed)
		return nil, false, nil // reading them all in order costs less
	}
	logged := func() {
		s.info("search index read back from its snapshot", "tenant", tenant, "cards", len(vs), "readAgain", len(again), "removed", len(gone),
			"took", time.Since(start).Round(time.Millisecond), "read", readTook.Round(time.Millisecond), "versions", versionsTook.Round(time.Millisecond))
	}
	if len(gone)+len(again) == 0 {
		logged()
		return x, true, nil
	}
	read := func(load func([]cards.Card)) error {
		return loadInBatches(cards.WithBatchRead(ctx), ix.store, tenant, again, load)
	}
	if err := x.Renew(gone, again, read); err != nil {
		return nil, false, err
	}
	logged()
	return x, false, nil
}

// saveSnapshot writes the tenant's index out if it holds enough cards and changed since it
// was last written (or read back): at all, or if share > 0, by about that share of its cards.
// Encoding holds the index's read lock for a time that grows with the index (BenchmarkSnapshot
// measures it), which a write waits for, and searches behind that write.
func (ix *Index) saveSnapshot(tenant tenants.ID, e *indexEntry, share float64) error {
	ix.saving.Lock() // one at a time: each holds an index's read lock while it writes
	defer ix.saving.Unlock()
	if share == 0 {
		e.saveQueued.Store(false) // what the write queued after the build would do, done now
	}
	return ix.saveLocked(tenant, e, share, ix.Snapshots.minCards())
}

// saveQueued writes the index out after its build (see entry), unless a write of every
// change did meanwhile: so that once SaveSnapshots returned, no write queued before it
// runs later.
func (ix *Index) saveQueued(tenant tenants.ID, e *indexEntry) error {
	ix.saving.Lock()
	defer ix.saving.Unlock()
	if !e.saveQueued.CompareAndSwap(true, false) {
		return nil
	}
	return ix.saveLocked(tenant, e, 0, ix.Snapshots.minCards())
}

// saveLocked is saveSnapshot of an index of at least minCards cards; the caller holds
// ix.saving.
func (ix *Index) saveLocked(tenant tenants.ID, e *indexEntry, share float64, minCards int) error {
	s := ix.Snapshots
	if e.dropped.Load() {
		return nil
	}
	e.x.RLockLong()
	gen, live := e.x.Gen(), e.x.Live()
	// Each card written moves gen on twice (removed, added again).
	changed := float64(gen-e.savedGen.Load()) / 2
	// Unchanged, it is on disk as it is, or was too small to be (and still is).
	if (changed == 0 && (e.onDisk.Load() || live < minCards)) || changed < share*float64(live) {
		e.x.RUnlockLong()
		return nil
	}
	if live < minCards {
		e.x.RUnlockLong()
		s.remove(tenant) // a snapshot of when it held more would only cost its next build
		e.savedGen.Store(gen)
		e.onDisk.Store(false)
		return nil
	}
	// Written out as it is encoded, so it is never held in memory whole; the file is synced
	// once the lock is let go.
	f, err := s.create()
	if err != nil {
		e.x.RUnlockLong()
	} else {
		err = func() error {
			defer e.x.RUnlockLong()
			return e.x.EncodeTo(f, string(tenant))
		}()
		err = s.commit(tenant, f, err)
	}
	if err != nil {
		return fmt.Errorf("write the search index snapshot of %s: %w", tenant, err)
	}
	e.savedGen.Store(gen)
	e.onDisk.Store(true)
	return nil
}

// SaveSnapshots writes out the loaded indexes that changed since they were last written (see
// Snapshots); the server calls it as it stops. When it returns, every index loaded and built
// before the call is on disk as it was at some moment during the call (a write under way after
// a build is waited for), unless ctx ended first: no write begins after that. It does nothing
// without Snapshots.
func (ix *Index) SaveSnapshots(ctx context.Context) error { return ix.saveSnapshots(ctx, 0) }

// SaveChangedSnapshots is SaveSnapshots for the indexes of which a tenth of the cards changed
// since: what the server writes now and then, so that after a crash a restart reads again at
// most about that share, without holding writes up for an index that changes a little. It
// also removes the snapshots of tenants gone (Snapshots.Tenants).
func (ix *Index) SaveChangedSnapshots(ctx context.Context) error {
	err := ix.saveSnapshots(ctx, 0.1)
	if ix.Snapshots != nil {
		err = errors.Join(err, ix.sweep(ctx))
	}
	return err
}

func (ix *Index) saveSnapshots(ctx context.Context, share float64) error {
	if ix.Snapshots == nil {
		return nil
	}
	var errs []error
	entries := ix.builtEntries()
	for _, tenant := range slices.Sorted(maps.Keys(entries)) {
		if err := ctx.Err(); err != nil {
			// Out of time: the writes queued after builds are called off too.
			ix.saving.Lock()
			for _, e := range entries {
				e.saveQueued.Store(false)
			}
			ix.saving.Unlock()
			return errors.Join(append(errs, err)...)
		}
		if err := ix.saveSnapshot(tenant, entries[tenant], share); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// SnapshotEvery is how often the server writes out the indexes that changed (SaveChangedSnapshots).
const SnapshotEvery = 5 * time.Minute
