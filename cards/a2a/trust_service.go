package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/search"
	"github.com/agentcards/agentcards/tenants"
)

// TrustStore keeps a tenant's trust policy on its row; storage's TenantStore is one.
type TrustStore interface {
	TrustPolicies
	// PutTrustIssuer creates the entry of the issuer's domain or replaces it, and answers it as
	// stored; a new entry past tenants.MaxTrustIssuers is a conflict.
	PutTrustIssuer(ctx context.Context, tenant tenants.ID, issuer tenants.TrustIssuer) (tenants.TrustIssuer, error)
	// RemoveTrustIssuer removes the entry of domain; not found when there is none.
	RemoveTrustIssuer(ctx context.Context, tenant tenants.ID, domain string) error
}

// Trust is what the API does with a tenant's trust policy: list its issuers, read one, put one,
// remove one. A change weighs again every imported card the changed domain covers, before it
// answers, and records a new revision of each card whose trust it changes.
type Trust struct {
	Store TrustStore
	// Cards writes the cards whose trust changes; CardStore reads them.
	Cards     *cards.Service
	CardStore cards.Store
	Gate      search.Gate
	Authz     cards.Authorizer
	// Keys fetches the key sets of issuers given by URL (and is shared with imports).
	Keys *KeySets
	Now  func() time.Time
}

// List returns the tenant's issuers in domain order. Anyone who may read every card may read
// them: a reader of trusted cards may see who vouches for them.
func (t *Trust) List(ctx context.Context, tenant tenants.ID) ([]tenants.TrustIssuer, error) {
	ctx, err := t.enter(ctx, tenant, authz.ObjAllCards, authz.ActCardsRead)
	if err != nil {
		return nil, err
	}
	return t.Store.TrustPolicy(ctx, tenant)
}

// Get returns the tenant's issuer of domain; not found when the policy has none.
func (t *Trust) Get(ctx context.Context, tenant tenants.ID, domain string) (tenants.TrustIssuer, error) {
	policy, err := t.List(ctx, tenant)
	if err != nil {
		return tenants.TrustIssuer{}, err
	}
	d, err := tenants.NormalizeTrustDomain(domain)
	if err == nil {
		if i := slices.IndexFunc(policy, func(e tenants.TrustIssuer) bool { return e.Domain == d }); i >= 0 {
			return policy[i], nil
		}
	}
	return tenants.TrustIssuer{}, fault.Errorf(fault.NotFound, "trust %q: not found", domain)
}

// Put creates the tenant's issuer of its domain or replaces it, then weighs again the cards the
// domain covers. A key set given by URL is fetched (through the outbound guard) before anything
// is stored, so an entry whose keys cannot be read is refused. It needs trust:manage on trust.
func (t *Trust) Put(ctx context.Context, tenant tenants.ID, issuer tenants.TrustIssuer) (tenants.TrustIssuer, cards.Reweighed, error) {
	ctx, err := t.enter(ctx, tenant, authz.ObjTrust, authz.ActTrustManage)
	if err != nil {
		return tenants.TrustIssuer{}, cards.Reweighed{}, err
	}
	if issuer.Domain, err = tenants.NormalizeTrustDomain(issuer.Domain); err != nil {
		return tenants.TrustIssuer{}, cards.Reweighed{}, err
	}
	if err := t.checkKeys(ctx, &issuer); err != nil {
		return tenants.TrustIssuer{}, cards.Reweighed{}, err
	}
	stored, err := t.Store.PutTrustIssuer(ctx, tenant, issuer)
	if err != nil {
		return tenants.TrustIssuer{}, cards.Reweighed{}, err
	}
	w, err := t.reweigh(ctx, tenant, stored.Domain)
	return stored, w, err
}

// Remove removes the tenant's issuer of domain, then weighs again the cards it covered. Not found
// when the policy has none. It needs trust:manage on trust.
func (t *Trust) Remove(ctx context.Context, tenant tenants.ID, domain string) (cards.Reweighed, error) {
	ctx, err := t.enter(ctx, tenant, authz.ObjTrust, authz.ActTrustManage)
	if err != nil {
		return cards.Reweighed{}, err
	}
	d, err := tenants.NormalizeTrustDomain(domain)
	if err != nil {
		return cards.Reweighed{}, fault.Errorf(fault.NotFound, "trust %q: not found", domain)
	}
	if err := t.Store.RemoveTrustIssuer(ctx, tenant, d); err != nil {
		return cards.Reweighed{}, err
	}
	return t.reweigh(ctx, tenant, d)
}

// checkKeys checks where an issuer's keys come from: exactly one of a JWKS URL, which is fetched
// now, and a pinned JWKS, which must hold public keys only. Either must hold at least one key a
// card signature can be checked with (ES256 on P-256, or EdDSA).
func (t *Trust) checkKeys(ctx context.Context, e *tenants.TrustIssuer) error {
	keys := cards.NonNull(e.Keys)
	if (len(keys) == 0) == (e.JWKSURL == "") {
		return fault.New(fault.Invalid, "give exactly one of jwksUrl and keys: invalid")
	}
	var set *jose.JSONWebKeySet
	if e.JWKSURL != "" {
		e.Keys = nil
		if err := cards.CheckHTTPURL("jwksUrl", e.JWKSURL); err != nil {
			return err
		}
		var err error
		if set, err = t.Keys.get(ctx, e.JWKSURL, "", true); err != nil {
			return err
		}
	} else {
		var raw struct {
			Keys []map[string]json.RawMessage `json:"keys"`
		}
		if err := json.Unmarshal(keys, &raw); err != nil || raw.Keys == nil {
			return fault.New(fault.Invalid, `keys: must be a JWKS, {"keys": [...]}: invalid`)
		}
		for i, k := range raw.Keys {
			if _, private := k["d"]; private {
				return fault.Errorf(fault.Invalid, "keys.keys[%d]: is a private key; pin the public key only: invalid", i)
			}
		}
		compact, err := json.Marshal(raw)
		if err != nil {
			return err
		}
		e.Keys = compact
		if set, err = readJWKS(compact); err != nil {
			return fault.Errorf(fault.Invalid, "keys: %s: invalid", err)
		}
	}
	usable := slices.ContainsFunc(set.Keys, func(k jose.JSONWebKey) bool {
		return keyFits(k.Key, string(jose.ES256)) || keyFits(k.Key, string(jose.EdDSA))
	})
	if !usable {
		where := "keys"
		if e.JWKSURL != "" {
			where = "jwksUrl: " + e.JWKSURL
		}
		return fault.Errorf(fault.Invalid, "%s: holds no public key that checks card signatures (ES256 on P-256, or EdDSA): invalid", where)
	}
	return nil
}

// reweighBatch is how many cards reweigh reads at once.
const reweighBatch = 500

// reweigh weighs again, against the policy as it now is, every card of the tenant imported with
// signatures whose interfaces live on a host domain covers, and records each whose trust changed.
// A card written meanwhile is read and weighed again.
func (t *Trust) reweigh(ctx context.Context, tenant tenants.ID, domain string) (cards.Reweighed, error) {
	var w cards.Reweighed
	policy, err := t.Store.TrustPolicy(ctx, tenant)
	if err != nil {
		return w, err
	}
	ids, err := t.CardStore.IDs(ctx, tenant)
	if err != nil {
		return w, err
	}
	for start := 0; start < len(ids); start += reweighBatch {
		batch, err := t.CardStore.GetMany(ctx, tenant, ids[start:min(len(ids), start+reweighBatch)])
		if err != nil {
			return w, err
		}
		for _, c := range batch {
			if !covers(domain, c) {
				continue
			}
			trusted, changed, err := reweighCard(ctx, t.Cards, t.CardStore, t.Keys, policy, tenant, c, t.now())
			if err != nil {
				return w, err
			}
			w.Weighed++
			if trusted {
				w.Trusted++
			}
			if changed {
				w.Changed++
			}
		}
	}
	return w, nil
}

// covers reports whether c was imported with signatures and has a host domain covers ("" covers
// every card).
func covers(domain string, c cards.Card) bool {
	if c.A2A == nil || c.A2A.Import == nil || c.A2A.Import.Signed == nil {
		return false
	}
	if domain == "" {
		return true
	}
	return slices.ContainsFunc(cardHosts(c), func(h string) bool { return tenants.TrustCovers(domain, h) })
}

// reweighCard weighs cur against policy and records the outcome when it differs from what the
// card holds, reading the card again when it was written meanwhile. It answers whether the card
// is trusted, and whether its record changed.
func reweighCard(ctx context.Context, svc *cards.Service, store cards.Store, keys *KeySets, policy []tenants.TrustIssuer, tenant tenants.ID, cur cards.Card, now time.Time) (trusted, changed bool, err error) {
	for range maxRefreshAttempts {
		if cur.A2A == nil || cur.A2A.Import == nil || cur.A2A.Import.Signed == nil {
			return false, false, nil // written meanwhile without an import record
		}
		rec := cur.A2A.Import
		check := weighTrust(ctx, keys, policy, cur, rec.Signed, rec.Signature, now)
		if sameTrust(rec.Trust, &check) {
			return check.Status == cards.TrustTrusted, false, nil
		}
		_, err := svc.Retrusted(ctx, tenant, cur, check)
		switch {
		case err == nil:
			return check.Status == cards.TrustTrusted, true, nil
		case errors.Is(err, cards.ErrNotFound):
			return false, false, nil
		case !errors.Is(err, cards.ErrStale):
			return false, false, err
		}
		if cur, err = store.Get(ctx, tenant, cur.AgentID); errors.Is(err, cards.ErrNotFound) {
			return false, false, nil
		} else if err != nil {
			return false, false, err
		}
	}
	return false, false, fault.Errorf(fault.Stale, "card %q changed under %d attempts to weigh its trust: revision does not match", cur.AgentID, maxRefreshAttempts)
}

// enter lets an authenticated caller into the tenant through the gate and checks that it may act
// on obj; a refused write is recorded by the checker.
func (t *Trust) enter(ctx context.Context, tenant tenants.ID, obj, act string) (context.Context, error) {
	if _, err := authz.Caller(ctx); err != nil {
		return nil, err
	}
	ctx, err := t.Gate.Enter(ctx, string(tenant))
	if err != nil {
		return nil, err
	}
	if err := t.Authz.Check(ctx, string(tenant), obj, act); err != nil {
		return nil, err
	}
	return ctx, nil
}

func (t *Trust) now() time.Time {
	if t.Now != nil {
		return t.Now().UTC()
	}
	return time.Now().UTC()
}

// weighImport weighs a card being imported or refreshed against the tenant's policy as it is now.
// Without a policy reader it records nothing (nil).
func (s *Service) weighImport(ctx context.Context, tenant tenants.ID, c cards.Card, signed *cards.SignedCard, check cards.SignatureCheck) ([]tenants.TrustIssuer, *cards.TrustCheck, error) {
	if s.Trust == nil {
		return nil, nil, nil
	}
	policy, err := s.Trust.TrustPolicy(ctx, tenant)
	if err != nil {
		return nil, nil, err
	}
	w := weighTrust(ctx, s.TrustKeys, policy, c, signed, check, time.Now().UTC())
	return policy, &w, nil
}

// settleTrust closes the race between an import (or refresh) and a policy change: the card was
// weighed against policy and then written as c. If the policy has changed since, the change's own
// pass over the cards may have read the card before it was written, so the card is weighed again
// here. Either the change committed before this read (and it is seen), or the change's pass reads
// the card after this write.
func (s *Service) settleTrust(ctx context.Context, tenant tenants.ID, policy []tenants.TrustIssuer, c cards.Card) (cards.Card, error) {
	if s.Trust == nil || c.A2A == nil || c.A2A.Import == nil || c.A2A.Import.Trust == nil {
		return c, nil
	}
	now, err := s.Trust.TrustPolicy(ctx, tenant)
	if err != nil || reflect.DeepEqual(now, policy) {
		return c, err
	}
	if _, _, err := reweighCard(ctx, s.Cards, s.Store, s.TrustKeys, now, tenant, c, time.Now().UTC()); err != nil {
		return c, fmt.Errorf("weigh trust again: %w", err)
	}
	return s.Store.Get(ctx, tenant, c.AgentID)
}
