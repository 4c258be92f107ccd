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

// TrustStore keeps a tenant's trust policy on its row; storage's TenantStore is one. Each change
// marks its domain pending, with a number, in the same transaction: the pass that weighs the
// domain's cards again clears it (ClearTrustPending), so a pass that does not end (the server
// stops, the database fails) is run again (Settle).
type TrustStore interface {
	TrustPolicies
	// PutTrustIssuer creates the entry of the issuer's domain or replaces it, and answers it as
	// stored and the change's number; a new entry past tenants.MaxTrustIssuers is a conflict.
	PutTrustIssuer(ctx context.Context, tenant tenants.ID, issuer tenants.TrustIssuer) (tenants.TrustIssuer, int64, error)
	// RemoveTrustIssuer removes the entry of domain and answers the change's number; not found
	// when there is none.
	RemoveTrustIssuer(ctx context.Context, tenant tenants.ID, domain string) (int64, error)
	// TrustPending lists every tenant's pending domains.
	TrustPending(ctx context.Context) ([]tenants.TrustPending, error)
	// ClearTrustPending takes the domain off the pending ones if its number is still seq.
	ClearTrustPending(ctx context.Context, tenant tenants.ID, domain string, seq int64) error
	// MarkTrustPending marks the domain pending ("" for every signed card of the tenant) without
	// a change of the policy: cards that could not be weighed when they were written.
	MarkTrustPending(ctx context.Context, tenant tenants.ID, domain string) error
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
	stored, seq, err := t.Store.PutTrustIssuer(ctx, tenant, issuer)
	if err != nil {
		return tenants.TrustIssuer{}, cards.Reweighed{}, err
	}
	w, err := t.settle(ctx, tenant, stored.Domain, seq)
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
	seq, err := t.Store.RemoveTrustIssuer(ctx, tenant, d)
	if err != nil {
		return cards.Reweighed{}, err
	}
	return t.settle(ctx, tenant, d, seq)
}

// settle weighs again the cards a change of the policy (number seq) covers, then clears the
// domain's pending mark. The pass runs to its end whatever becomes of the request that made the
// change (a client gone, its deadline): if it fails, the mark stays, Settle runs it again, and
// the request is told so.
func (t *Trust) settle(ctx context.Context, tenant tenants.ID, domain string, seq int64) (cards.Reweighed, error) {
	ctx = context.WithoutCancel(ctx)
	w, err := t.reweigh(ctx, tenant, domain)
	if err == nil {
		err = t.Store.ClearTrustPending(ctx, tenant, domain, seq)
	}
	if err != nil {
		return w, fault.Wrap(err, fault.Unavailable, "trust %q: the policy is changed, and its cards are weighed again in the background: weighing them here failed", domain)
	}
	return w, nil
}

// trustJob is who weighs cards again when no request does (Settle).
var trustJob = authz.Principal{Subject: authz.JobPrefix + "trust", PlatformAdmin: true}

// Settle weighs again the cards of every domain whose pass has not ended (a server stopped, the
// database failed during it, the issuer's keys could not be read), and clears each domain it
// finishes; a domain marked less than grace ago is left to the pass that marked it. A domain it
// cannot settle (its tenant suspended, its issuer down) stays pending for the next round, and the
// others are settled all the same. It answers how many domains it settled, and the errors of the
// others; run it at start and every so often (app.Start does).
func (t *Trust) Settle(ctx context.Context, grace time.Duration) (int, error) {
	pending, err := t.Store.TrustPending(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	young := t.now().Add(-grace).UnixNano()
	for _, p := range pending {
		if ctx.Err() != nil {
			return n, ctx.Err()
		}
		if p.Seq > young {
			continue
		}
		job := authz.AsJob(authz.WithPrincipal(ctx, trustJob), "trust", "trust.reweigh")
		if _, err := t.reweigh(job, p.Tenant, p.Domain); err != nil {
			if !errors.Is(err, tenants.ErrNotFound) {
				errs = append(errs, fmt.Errorf("trust of tenant %q, domain %q: %w", p.Tenant, p.Domain, err))
			}
			continue
		}
		if err := t.Store.ClearTrustPending(ctx, p.Tenant, p.Domain, p.Seq); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// RunSettle runs Settle every interval until ctx ends (a mark younger than two intervals left to
// its own pass), telling onError of each failed round.
func (t *Trust) RunSettle(ctx context.Context, interval time.Duration, onError func(error)) {
	for {
		if _, err := t.Settle(ctx, 2*interval); err != nil && ctx.Err() == nil && onError != nil {
			onError(err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
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
			if _, symmetric := k["k"]; symmetric {
				return fault.Errorf(fault.Invalid, "keys.keys[%d]: is a symmetric key, a secret: pin public keys only: invalid", i)
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
const reweighBatch = 100

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
			trusted, changed, err := reweighCard(ctx, t.Cards, t.CardStore, t.Store, t.Keys, policy, tenant, c, t.now())
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
// card holds, reading the card again when it was written meanwhile. After a write it reads the
// policy again: one changed meanwhile (by another request, whose own pass may have read the card
// before this write) is weighed against at once, so no card keeps the outcome of a policy that is
// gone. It answers whether the card is trusted, and whether its record changed.
func reweighCard(ctx context.Context, svc *cards.Service, store cards.Store, policies TrustPolicies, keys *KeySets, policy []tenants.TrustIssuer, tenant tenants.ID, cur cards.Card, now time.Time) (trusted, changed bool, err error) {
	for range maxRefreshAttempts {
		if cur.A2A == nil || cur.A2A.Import == nil || cur.A2A.Import.Signed == nil {
			return false, changed, nil // written meanwhile without an import record
		}
		rec := cur.A2A.Import
		check, unread := weighTrust(ctx, keys, policy, cur, rec.Signed, rec.Signature, now)
		if unread != nil {
			// Keys that cannot be read now say nothing lasting of the card: it is left as it is
			// for a pass that can read them.
			return false, changed, unread
		}
		if sameTrust(rec.Trust, &check) {
			return check.Status == cards.TrustTrusted, changed, nil
		}
		written, err := svc.Retrusted(ctx, tenant, cur, check)
		switch {
		case err == nil:
			changed = true
			latest, err := policies.TrustPolicy(ctx, tenant)
			if err != nil {
				return false, changed, err
			}
			if reflect.DeepEqual(latest, policy) {
				return check.Status == cards.TrustTrusted, changed, nil
			}
			policy, cur = latest, written
			continue
		case errors.Is(err, cards.ErrNotFound):
			return false, changed, nil
		case !errors.Is(err, cards.ErrStale):
			return false, changed, err
		}
		if cur, err = store.Get(ctx, tenant, cur.AgentID); errors.Is(err, cards.ErrNotFound) {
			return false, changed, nil
		} else if err != nil {
			return false, changed, err
		}
	}
	return false, changed, fault.Errorf(fault.Stale, "card %q changed under %d attempts to weigh its trust: revision does not match", cur.AgentID, maxRefreshAttempts)
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

// weighImport weighs a card being imported or refreshed against the tenant's policy as it is now,
// and answers the policy as read and the issuer's keys that could not be read, if any (see
// weighTrust). Without a policy store it records nothing (nil).
func (s *Service) weighImport(ctx context.Context, tenant tenants.ID, c cards.Card, signed *cards.SignedCard, check cards.SignatureCheck) ([]tenants.TrustIssuer, *cards.TrustCheck, *keysUnread, error) {
	if s.Trust == nil {
		return nil, nil, nil, nil
	}
	policy, err := s.Trust.TrustPolicy(ctx, tenant)
	if err != nil {
		return nil, nil, nil, err
	}
	w, unread := weighTrust(ctx, s.TrustKeys, policy, c, signed, check, time.Now().UTC())
	return policy, &w, unread, nil
}

// settleTrust closes the race between an import (or refresh) and a policy change: the card was
// weighed against policy and then written as c. If the policy has changed since, the change's own
// pass over the cards may have read the card before it was written, so the card is weighed again
// here. Either the change committed before this read (and it is seen), or the change's pass reads
// the card after this write. When the card cannot be weighed now (the issuer's keys could not be
// read, unread; or this second weighing fails), its weighing is left to Settle: the issuer's
// domain, or every signed card of the tenant, is marked pending. The card as written is answered
// either way, unless even the mark cannot be written.
func (s *Service) settleTrust(ctx context.Context, tenant tenants.ID, policy []tenants.TrustIssuer, c cards.Card, unread *keysUnread) (cards.Card, error) {
	if s.Trust == nil || c.A2A == nil || c.A2A.Import == nil || c.A2A.Import.Trust == nil {
		return c, nil
	}
	ctx = context.WithoutCancel(ctx) // the card is written: what follows is owed to it
	var later []string
	if unread != nil {
		later = append(later, unread.domain)
	}
	now, err := s.Trust.TrustPolicy(ctx, tenant)
	if err == nil && !reflect.DeepEqual(now, policy) {
		var changed bool
		if _, changed, err = reweighCard(ctx, s.Cards, s.Store, s.Trust, s.TrustKeys, now, tenant, c, time.Now().UTC()); err == nil && changed {
			if latest, gerr := s.Store.Get(ctx, tenant, c.AgentID); gerr == nil {
				c = latest
			}
		}
	}
	if err != nil {
		later = append(later, "") // every signed card of the tenant
	}
	for _, d := range later {
		if merr := s.Trust.MarkTrustPending(ctx, tenant, d); merr != nil {
			return c, fault.Wrap(errors.Join(err, merr), fault.Unavailable, "card %q is stored, and its trust could be weighed neither now nor later", c.AgentID)
		}
	}
	return c, nil
}
