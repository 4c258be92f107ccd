package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/tenants/audit"
)

// A tenant's trust policy lives on its row (migration 22), as one JSON array of issuers in
// domain order. Imports and refreshes read it with TrustPolicy; it is written one issuer at a
// time, read, changed and written back under the row's lock.

// TrustPolicy returns the tenant's trust issuers in domain order, as the database holds them
// now; not found when there is no such tenant.
func (s *TenantStore) TrustPolicy(ctx context.Context, tenant tenants.ID) ([]tenants.TrustIssuer, error) {
	var col string
	err := s.db.with(ctx).Model(&tenantRow{}).Select("trust").Where("tenant_id = ?", string(tenant)).Take(&col).Error
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return nil, fault.Errorf(fault.NotFound, "tenant %q: not found", string(tenant))
	case err != nil:
		return nil, fmt.Errorf("trust of tenant %q: %w", string(tenant), err)
	}
	return decodeTrust(string(tenant), col)
}

// PutTrustIssuer stores issuer under its domain in the tenant's policy, as a new entry or in
// place of the entry of that domain, stamped with the time it is written, and answers it as
// stored with the number the change marks its domain pending with (see ClearTrustPending). It
// refuses a new entry past tenants.MaxTrustIssuers, or a policy past tenants.MaxTrustBytes
// (conflict), and a missing tenant (not found). The entry is stored as given: its caller
// validates it.
func (s *TenantStore) PutTrustIssuer(ctx context.Context, tenant tenants.ID, issuer tenants.TrustIssuer) (tenants.TrustIssuer, int64, error) {
	entry := audit.New(ctx, "trust.put", audit.TrustObject(issuer.Domain), 0, 0)
	seq, err := s.writeTrust(ctx, tenant, issuer.Domain, func(tx *gorm.DB, policy []tenants.TrustIssuer) ([]tenants.TrustIssuer, error) {
		issuer.UpdatedAt = utc(tx.NowFunc())
		i, found := slices.BinarySearchFunc(policy, issuer.Domain, func(e tenants.TrustIssuer, d string) int { return strings.Compare(e.Domain, d) })
		switch {
		case found:
			entry.Detail = "replaced: " + trustDetail(issuer)
			policy[i] = issuer
		case len(policy) >= tenants.MaxTrustIssuers:
			return nil, fault.Errorf(fault.Conflict, "trust %q: the tenant trusts %d issuers, the most it may; remove one first", issuer.Domain, len(policy))
		default:
			entry.Detail = "created: " + trustDetail(issuer)
			policy = slices.Insert(policy, i, issuer)
		}
		return policy, nil
	}, &entry)
	if err != nil {
		return tenants.TrustIssuer{}, 0, err
	}
	return issuer, seq, nil
}

// RemoveTrustIssuer removes the tenant's issuer of domain, and answers the number the change
// marks its domain pending with; not found if the policy has none (or there is no such tenant).
func (s *TenantStore) RemoveTrustIssuer(ctx context.Context, tenant tenants.ID, domain string) (int64, error) {
	entry := audit.New(ctx, "trust.remove", audit.TrustObject(domain), 0, 0)
	return s.writeTrust(ctx, tenant, domain, func(_ *gorm.DB, policy []tenants.TrustIssuer) ([]tenants.TrustIssuer, error) {
		i := slices.IndexFunc(policy, func(e tenants.TrustIssuer) bool { return e.Domain == domain })
		if i < 0 {
			return nil, fault.Errorf(fault.NotFound, "trust %q: not found", domain)
		}
		entry.Detail = "removed: " + trustDetail(policy[i])
		return slices.Delete(policy, i, i+1), nil
	}, &entry)
}

// TrustPending returns, for every tenant, the domains whose cards a change of its policy has yet
// to weigh again, each with the number of the last such change.
func (s *TenantStore) TrustPending(ctx context.Context) ([]tenants.TrustPending, error) {
	var rows []tenantRow
	if err := s.db.with(ctx).Select("tenant_id", "trust_pending").Where("trust_pending <> ?", "{}").Order("tenant_id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("pending trust: %w", err)
	}
	var out []tenants.TrustPending
	for _, r := range rows {
		pending, err := decodePending(r.TenantID, r.TrustPending)
		if err != nil {
			return nil, err
		}
		for _, d := range slices.Sorted(maps.Keys(pending)) {
			out = append(out, tenants.TrustPending{Tenant: tenants.ID(r.TenantID), Domain: d, Seq: pending[d]})
		}
	}
	return out, nil
}

// MarkTrustPending marks domain pending in the tenant ("" standing for every card), as a change
// of its policy does, without a change: cards written that could not be weighed then.
func (s *TenantStore) MarkTrustPending(ctx context.Context, tenant tenants.ID, domain string) error {
	_, err := s.writeTrust(ctx, tenant, domain, func(_ *gorm.DB, policy []tenants.TrustIssuer) ([]tenants.TrustIssuer, error) {
		return policy, nil
	}, nil)
	return err
}

// ClearTrustPending takes domain off the tenant's pending domains, if the last change that marked
// it is still seq: a change made since has a pass of its own to wait for.
func (s *TenantStore) ClearTrustPending(ctx context.Context, tenant tenants.ID, domain string, seq int64) error {
	err := s.writeColumns(ctx, tenant, []string{"trust_pending"}, func(_ *gorm.DB, old []string) ([]string, error) {
		pending, err := decodePending(string(tenant), old[0])
		if err != nil || pending[domain] != seq {
			return nil, err
		}
		delete(pending, domain)
		col, err := encodePending(pending)
		return []string{col}, err
	}, nil)
	if fault.KindOf(err) == fault.NotFound {
		return nil // the tenant is gone, and its pending domains with it
	}
	return err
}

// trustDetail says in an audit entry where an issuer's keys come from.
func trustDetail(e tenants.TrustIssuer) string {
	if e.JWKSURL != "" {
		return "keys at " + e.JWKSURL
	}
	var set struct {
		Keys []struct {
			Kid string `json:"kid"`
		} `json:"keys"`
	}
	_ = json.Unmarshal(e.Keys, &set)
	kids := make([]string, 0, len(set.Keys))
	for _, k := range set.Keys {
		kids = append(kids, k.Kid)
	}
	return fmt.Sprintf("%d pinned keys (kid %s)", len(set.Keys), strings.Join(kids, ", "))
}

// writeTrust reads the tenant's policy under its row's lock, lets change make the new one, and
// writes it back with domain marked pending (with the number it answers) and the audit entry
// (none when nil), which change may fill in, in one transaction.
func (s *TenantStore) writeTrust(ctx context.Context, tenant tenants.ID, domain string, change func(tx *gorm.DB, policy []tenants.TrustIssuer) ([]tenants.TrustIssuer, error), entry *audit.Entry) (int64, error) {
	seq := time.Now().UnixNano()
	err := s.writeColumns(ctx, tenant, []string{"trust", "trust_pending"}, func(tx *gorm.DB, old []string) ([]string, error) {
		policy, err := decodeTrust(string(tenant), old[0])
		if err != nil {
			return nil, err
		}
		if policy, err = change(tx, policy); err != nil {
			return nil, err
		}
		col := "[]"
		if len(policy) > 0 {
			b, err := json.Marshal(policy)
			if err != nil {
				return nil, err
			}
			col = string(b)
		}
		if len(col) > tenants.MaxTrustBytes && len(col) > len(old[0]) {
			return nil, fault.Errorf(fault.Conflict, "trust: the tenant's issuers would take %d bytes, over the %d they may take together; remove some or pin fewer keys",
				len(col), tenants.MaxTrustBytes)
		}
		pending, err := decodePending(string(tenant), old[1])
		if err != nil {
			return nil, err
		}
		if pending[domain] >= seq {
			seq = pending[domain] + 1 // numbers only grow, whatever this replica's clock says
		}
		pending[domain] = seq
		pcol, err := encodePending(pending)
		return []string{col, pcol}, err
	}, entry)
	return seq, err
}

// decodePending reads a trust_pending column back: domain → number of the change that marked it.
func decodePending(tenant, col string) (map[string]int64, error) {
	pending := map[string]int64{}
	if col == "" || col == "{}" {
		return pending, nil
	}
	if err := json.Unmarshal([]byte(col), &pending); err != nil {
		return nil, fmt.Errorf("pending trust of tenant %q: %w", tenant, err)
	}
	return pending, nil
}

func encodePending(pending map[string]int64) (string, error) {
	if len(pending) == 0 {
		return "{}", nil
	}
	b, err := json.Marshal(pending)
	return string(b), err
}

// decodeTrust reads a trust column back; nil for none.
func decodeTrust(tenant, col string) ([]tenants.TrustIssuer, error) {
	if col == "" || col == "[]" {
		return nil, nil
	}
	var policy []tenants.TrustIssuer
	if err := json.Unmarshal([]byte(col), &policy); err != nil {
		return nil, fmt.Errorf("trust of tenant %q: %w", tenant, err)
	}
	for i := range policy {
		policy[i].UpdatedAt = policy[i].UpdatedAt.UTC()
	}
	return policy, nil
}
