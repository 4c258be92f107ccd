package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/migrations"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/tenants/audit"
)

// A tenant's synonym sets live on its row (migration 17), as one JSON array in id order, so that
// the request gate reads them with the row it reads anyway. They are written one set at a time,
// read, changed and written back under the row's lock.

// encodeSynonyms is the synonyms column of sets: "[]" for none, never "null".
func encodeSynonyms(sets []tenants.SynonymSet) (string, error) {
	if len(sets) == 0 {
		return "[]", nil
	}
	// Unescaped <, > and &: JSON needs no escape for them, and they would take six bytes each.
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(sets); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// decodeSynonyms reads a synonyms column back; nil for none.
func decodeSynonyms(tenant, col string) ([]tenants.SynonymSet, error) {
	if col == "" || col == "[]" {
		return nil, nil
	}
	var sets []tenants.SynonymSet
	if err := json.Unmarshal([]byte(col), &sets); err != nil {
		return nil, fmt.Errorf("synonyms of tenant %q: %w", tenant, err)
	}
	for i := range sets {
		sets[i].UpdatedAt = sets[i].UpdatedAt.UTC()
	}
	return sets, nil
}

// readSynonyms is decodeSynonyms for a tenant row read: while a tenant's column stays the same,
// every read of its row answers the same sets, shared (their readers do not change them). The
// gate reads each tenant's row again every server.tenantCacheTtl, and the search compiles a
// tenant's sets once per slice it is given, so neither decoding nor compiling is repeated
// between changes.
func readSynonyms(tenant, col string) ([]tenants.SynonymSet, error) {
	if col == "" || col == "[]" {
		return nil, nil
	}
	synonymReads.Lock()
	last, ok := synonymReads.m[tenant]
	synonymReads.Unlock()
	if ok && last.col == col {
		return last.sets, nil
	}
	sets, err := decodeSynonyms(tenant, col)
	if err != nil {
		return nil, err
	}
	synonymReads.Lock()
	if len(synonymReads.m) >= maxSynonymReads {
		clear(synonymReads.m)
	}
	synonymReads.m[tenant] = decodedSynonyms{col: col, sets: sets}
	synonymReads.Unlock()
	return sets, nil
}

type decodedSynonyms struct {
	col  string
	sets []tenants.SynonymSet
}

// synonymReads holds, by tenant, the column last decoded for a row read and its sets; at most
// maxSynonymReads tenants, then it starts over.
var synonymReads = struct {
	sync.Mutex
	m map[string]decodedSynonyms
}{m: map[string]decodedSynonyms{}}

const maxSynonymReads = 1 << 12

// PutSynonyms stores set under its id in the tenant's synonyms, as a new set or in place of the
// set of that id, stamped with the time it is written, and answers it as stored. It refuses a
// new set past tenants.MaxSynonymSets (conflict), and a missing tenant (not found). The set is
// stored as given: its caller validates it.
func (s *TenantStore) PutSynonyms(ctx context.Context, tenant tenants.ID, set tenants.SynonymSet) (tenants.SynonymSet, error) {
	entry := audit.New(ctx, "synonyms.put", audit.SynonymsObject(set.ID), 0, 0)
	set.Words = slices.Clone(set.Words)
	err := s.writeSynonyms(ctx, tenant, func(tx *gorm.DB, sets []tenants.SynonymSet) ([]tenants.SynonymSet, error) {
		set.UpdatedAt = utc(tx.NowFunc())
		i, found := slices.BinarySearchFunc(sets, set.ID, func(s tenants.SynonymSet, id string) int { return strings.Compare(s.ID, id) })
		switch {
		case found:
			entry.Detail = "replaced: " + strings.Join(set.Words, ", ")
			sets[i] = set
		case len(sets) >= tenants.MaxSynonymSets:
			return nil, fault.Errorf(fault.Conflict, "synonyms %q: the tenant has %d sets, the most it may have; remove one first", set.ID, len(sets))
		default:
			entry.Detail = "created: " + strings.Join(set.Words, ", ")
			sets = slices.Insert(sets, i, set)
		}
		return sets, nil
	}, &entry)
	if err != nil {
		return tenants.SynonymSet{}, err
	}
	return set, nil
}

// RemoveSynonyms removes the tenant's synonym set id; not found if the tenant has none of that id
// (or there is no such tenant).
func (s *TenantStore) RemoveSynonyms(ctx context.Context, tenant tenants.ID, id string) error {
	entry := audit.New(ctx, "synonyms.remove", audit.SynonymsObject(id), 0, 0)
	return s.writeSynonyms(ctx, tenant, func(_ *gorm.DB, sets []tenants.SynonymSet) ([]tenants.SynonymSet, error) {
		i := slices.IndexFunc(sets, func(s tenants.SynonymSet) bool { return s.ID == id })
		if i < 0 {
			return nil, fault.Errorf(fault.NotFound, "synonyms %q: not found", id)
		}
		entry.Detail = "removed: " + strings.Join(sets[i].Words, ", ")
		return slices.Delete(sets, i, i+1), nil
	}, &entry)
}

// writeSynonyms reads the tenant's sets under its row's lock, lets change make the new list, and
// writes it back with the audit entry, which change may fill in, in one transaction.
func (s *TenantStore) writeSynonyms(ctx context.Context, tenant tenants.ID, change func(tx *gorm.DB, sets []tenants.SynonymSet) ([]tenants.SynonymSet, error), entry *audit.Entry) error {
	return s.writeColumns(ctx, tenant, []string{"synonyms"}, func(tx *gorm.DB, old []string) ([]string, error) {
		sets, err := decodeSynonyms(string(tenant), old[0])
		if err != nil {
			return nil, err
		}
		if sets, err = change(tx, sets); err != nil {
			return nil, err
		}
		col, err := encodeSynonyms(sets)
		if err != nil {
			return nil, err
		}
		if len(col) > tenants.MaxSynonymBytes && len(col) > len(old[0]) {
			return nil, fault.Errorf(fault.Conflict, "synonyms: the tenant's sets would take %d bytes, over the %d they may take together; remove or shorten some first",
				len(col), tenants.MaxSynonymBytes)
		}
		return []string{col}, nil
	}, entry)
}

// rowLock is the lock a write of a tenant's JSON columns takes on its row, as Update does: on
// Postgres NO KEY UPDATE, which the key-share locks of concurrent inserts of the tenant's cards,
// records and rules do not wait for. It serialises two writes of a column, so that neither loses
// the other's.
func (s *TenantStore) rowLock() string {
	if s.db.dialect == migrations.Postgres {
		return "NO KEY UPDATE"
	}
	return "UPDATE"
}

// writeColumns reads JSON columns of the tenant's row (synonyms; trust and trust_pending) under
// the row's lock, lets change make their new values (nil: leave them), and writes them back with
// the audit entry (none when nil), which change may fill in, in one transaction.
func (s *TenantStore) writeColumns(ctx context.Context, tenant tenants.ID, columns []string, change func(tx *gorm.DB, old []string) ([]string, error), entry *audit.Entry) error {
	return s.db.transact(ctx, func(tx *gorm.DB) error {
		var row tenantRow
		err := tx.Clauses(clause.Locking{Strength: s.rowLock()}).Select(columns).Where("tenant_id = ?", string(tenant)).Take(&row).Error
		switch {
		case errors.Is(err, gorm.ErrRecordNotFound):
			return fault.Errorf(fault.NotFound, "tenant %q: not found", string(tenant))
		case err != nil:
			return fmt.Errorf("%s of tenant %q: %w", columns[0], string(tenant), err)
		}
		old := make([]string, len(columns))
		for i, c := range columns {
			old[i] = *row.jsonColumn(c)
		}
		cols, err := change(tx, old)
		if err != nil || cols == nil {
			return err
		}
		set := make(map[string]any, len(columns))
		for i, c := range columns {
			set[c] = cols[i]
		}
		if err := tx.Model(&tenantRow{}).Where("tenant_id = ?", string(tenant)).UpdateColumns(set).Error; err != nil {
			return fmt.Errorf("%s of tenant %q: %w", columns[0], string(tenant), err)
		}
		if entry == nil {
			return nil
		}
		return s.db.record(tx, string(tenant), *entry)
	})
}

// jsonColumn is the field of the row's JSON column of that name.
func (r *tenantRow) jsonColumn(name string) *string {
	switch name {
	case "synonyms":
		return &r.Synonyms
	case "trust":
		return &r.Trust
	case "trust_pending":
		return &r.TrustPending
	}
	panic("storage: no JSON column " + name + " on tenants")
}
