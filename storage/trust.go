package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

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
// stored. It refuses a new entry past tenants.MaxTrustIssuers, or a policy past
// tenants.MaxTrustBytes (conflict), and a missing tenant (not found). The entry is stored as
// given: its caller validates it.
func (s *TenantStore) PutTrustIssuer(ctx context.Context, tenant tenants.ID, issuer tenants.TrustIssuer) (tenants.TrustIssuer, error) {
	entry := audit.New(ctx, "trust.put", audit.TrustObject(issuer.Domain), 0, 0)
	err := s.writeTrust(ctx, tenant, func(tx *gorm.DB, policy []tenants.TrustIssuer) ([]tenants.TrustIssuer, error) {
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
		return tenants.TrustIssuer{}, err
	}
	return issuer, nil
}

// RemoveTrustIssuer removes the tenant's issuer of domain; not found if the policy has none (or
// there is no such tenant).
func (s *TenantStore) RemoveTrustIssuer(ctx context.Context, tenant tenants.ID, domain string) error {
	entry := audit.New(ctx, "trust.remove", audit.TrustObject(domain), 0, 0)
	return s.writeTrust(ctx, tenant, func(_ *gorm.DB, policy []tenants.TrustIssuer) ([]tenants.TrustIssuer, error) {
		i := slices.IndexFunc(policy, func(e tenants.TrustIssuer) bool { return e.Domain == domain })
		if i < 0 {
			return nil, fault.Errorf(fault.NotFound, "trust %q: not found", domain)
		}
		entry.Detail = "removed: " + trustDetail(policy[i])
		return slices.Delete(policy, i, i+1), nil
	}, &entry)
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

func (s *TenantStore) writeTrust(ctx context.Context, tenant tenants.ID, change func(tx *gorm.DB, policy []tenants.TrustIssuer) ([]tenants.TrustIssuer, error), entry *audit.Entry) error {
	return s.writeColumn(ctx, tenant, "trust", func(tx *gorm.DB, old string) (string, error) {
		policy, err := decodeTrust(string(tenant), old)
		if err != nil {
			return "", err
		}
		if policy, err = change(tx, policy); err != nil {
			return "", err
		}
		col := "[]"
		if len(policy) > 0 {
			b, err := json.Marshal(policy)
			if err != nil {
				return "", err
			}
			col = string(b)
		}
		if len(col) > tenants.MaxTrustBytes && len(col) > len(old) {
			return "", fault.Errorf(fault.Conflict, "trust: the tenant's issuers would take %d bytes, over the %d they may take together; remove some or pin fewer keys",
				len(col), tenants.MaxTrustBytes)
		}
		return col, nil
	}, entry)
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
