package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/go-jose/go-jose/v4"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/search"
	"github.com/agentcards/agentcards/tenants"
)

// Service is what the A2A routes do with cards: import one, return the one an A2A client asks
// for, and list a tenant's public agents, as a list and as an AI Catalog.
type Service struct {
	Store cards.Store
	Authz cards.Authorizer
	// Cards creates imported cards, validated and normalized as every card is.
	Cards *cards.Service
	// Search lists the public cards; its Gate admits this service's callers too.
	Search *search.Service
	// Tenants names the tenant of an AI Catalog (Catalog).
	Tenants PublishedTenants
	// Fetch is the HTTP client imports use for card URLs and jku key sets: the SSRF-guarded
	// one. Nil disables import by URL and jku.
	Fetch Doer
	// Trust holds the tenant's trust policy, which imports and refreshes weigh cards against (see
	// weighTrust), and marks what they could not weigh for Settle; nil records no trust.
	// TrustKeys fetches the key sets it names by URL.
	Trust     TrustStore
	TrustKeys *KeySets
}

// ImportRequest is the body of an import: exactly one of Card and URL.
type ImportRequest struct {
	AgentID string          `json:"agentId"`
	Card    json.RawMessage `json:"card,omitempty"`
	URL     string          `json:"url,omitempty"`
	// Keys verify the card's signatures, before any jku the signatures name.
	Keys *jose.JSONWebKeySet `json:"keys,omitempty"`
	// AllowInvalidSignature stores a card whose signature is invalid (the record says so).
	AllowInvalidSignature bool             `json:"allowInvalidSignature,omitempty"`
	Visibility            cards.Visibility `json:"visibility,omitempty"`
}

// Import creates the card of an agent from an A2A card sent inline or fetched from a URL with
// s.Fetch. cards.ErrExists if the agent already has a card; fault.BadSignature for a signature its
// key rejects, unless AllowInvalidSignature.
func (s *Service) Import(ctx context.Context, tenant tenants.ID, body []byte) (cards.Card, error) {
	if _, err := authz.Caller(ctx); err != nil {
		return cards.Card{}, err
	}
	ctx, err := s.Search.Gate.Enter(ctx, string(tenant))
	if err != nil {
		return cards.Card{}, err
	}
	var req ImportRequest
	if err := cards.DecodeStrict(body, &req); err != nil {
		return cards.Card{}, err
	}
	if err := cards.ValidateAgentID(req.AgentID); err != nil {
		return cards.Card{}, err
	}
	if (len(cards.NonNull(req.Card)) == 0) == (req.URL == "") {
		return cards.Card{}, fault.New(fault.Invalid, "send exactly one of card and url: invalid")
	}
	// Authorize before fetching anything: a caller who may not write must not make us call out.
	if err := s.Authz.Check(ctx, string(tenant), authz.CardObject(req.AgentID), authz.ActCardsWrite); err != nil {
		return cards.Card{}, err
	}
	raw := []byte(req.Card)
	if req.URL != "" {
		if err := cards.CheckHTTPURL("url", req.URL); err != nil {
			return cards.Card{}, err
		}
		if s.Fetch == nil {
			return cards.Card{}, fault.New(fault.Invalid, "url: import by URL is not configured: invalid")
		}
		var err error
		if raw, err = fetchJSON(ctx, s.Fetch, "url", req.URL, MaxImportBytes); err != nil {
			return cards.Card{}, err
		}
	}
	if err := s.checkDepth(raw); err != nil {
		return cards.Card{}, err
	}
	a, format, err := ParseCard(raw)
	if err != nil {
		return cards.Card{}, err
	}
	v := &verifier{keys: req.Keys, fetch: s.Fetch}
	check := v.verify(ctx, raw)
	if check.Status == cards.SignatureInvalid && !req.AllowInvalidSignature {
		return cards.Card{}, fault.Errorf(fault.BadSignature, "%s (send allowInvalidSignature: true to import it anyway): invalid signature", check.Reason)
	}
	c := ToCard(req.AgentID, a)
	c.Visibility = req.Visibility
	rec := cards.ImportRecord{Format: format, URL: req.URL, Signature: check}
	policy, unread, err := s.weigh(ctx, tenant, c, raw, &rec)
	if err != nil {
		return cards.Card{}, err
	}
	created, err := s.Cards.CreateImported(ctx, tenant, c, rec)
	if err != nil {
		return cards.Card{}, err
	}
	return s.settleTrust(ctx, tenant, policy, created, unread)
}

// weigh keeps in rec what the publisher of raw signed, and weighs the card c mapped from it
// against the tenant's trust policy, which it returns as it read it. A signed card that cannot
// be kept (over cards.MaxDocumentBytes, or not UTF-8, which no database column holds as text) is
// not: its trust could never be weighed again, so it is untrusted.
func (s *Service) weigh(ctx context.Context, tenant tenants.ID, c cards.Card, raw []byte, rec *cards.ImportRecord) ([]tenants.TrustIssuer, *keysUnread, error) {
	signed, err := signedContent(raw)
	if err != nil {
		return nil, nil, fault.Errorf(fault.Invalid, "card: %s: invalid", err)
	}
	unkept := ""
	switch {
	case signed == nil:
	case !utf8.Valid(signed.Card) || !utf8.Valid(signed.Signatures):
		unkept = "the card is not valid UTF-8, so its signed form is not kept"
	case len(signed.Card)+len(signed.Signatures) > cards.MaxDocumentBytes:
		unkept = fmt.Sprintf("the signed card is over %d bytes, so it is not kept", cards.MaxDocumentBytes)
	}
	if unkept != "" {
		policy, trust, _, err := s.weighImport(ctx, tenant, c, nil, rec.Signature)
		if trust != nil {
			trust.Reason = unkept + ", and its trust cannot be weighed"
		}
		rec.Trust = trust
		return policy, nil, err
	}
	rec.Signed = signed
	policy, trust, unread, err := s.weighImport(ctx, tenant, c, signed, rec.Signature)
	rec.Trust = trust
	return policy, unread, err
}

// cardShape is the structure of an A2A card above its free-form values (see cards.Shape): every
// other member, each member of a skill and each extension of its capabilities are counted on
// their own, as the registry card's values they become are.
var cardShape = cards.Shape{"skills": {}, "capabilities": {"extensions": {}}}

// checkDepth refuses an A2A card, sent or fetched, with a value nested deeper than the registry
// takes in a card (cards.Service.JSONDepth), naming it ("card.securitySchemes"), before the
// schema, the signature check and the mapping walk it.
func (s *Service) checkDepth(raw []byte) error {
	return cards.CheckDepth(raw, "card", cardShape, s.Cards.JSONDepth())
}

// RefreshRequest is the body of a refresh: the keys that verify the card's signatures, before
// any jku they name (as on import, where they are not kept).
type RefreshRequest struct {
	Keys *jose.JSONWebKeySet `json:"keys,omitempty"`
	// AllowInvalidSignature applies a card whose signature is invalid (its record says so), as on
	// import; a card that loses a verified signature is still refused.
	AllowInvalidSignature bool `json:"allowInvalidSignature,omitempty"`
}

// Refreshed is what a refresh answers: the card as it now is, and what the refresh did.
type Refreshed struct {
	Card cards.Card `json:"card"`
	cards.RefreshOutcome
}

// Refresh fetches the A2A card of an agent again from the URL it was imported from, and applies
// it as a new revision when it changed (cards.Service.Refreshed). A card whose signature does not
// verify, when the one applied before did, or that a key rejects, is not applied: the refresh is
// refused, and recorded so. Conflict for a card not imported from a URL; a fetch that fails is an
// error and records nothing.
func (s *Service) Refresh(ctx context.Context, tenant tenants.ID, agentID string, body []byte) (Refreshed, error) {
	if _, err := authz.Caller(ctx); err != nil {
		return Refreshed{}, err
	}
	ctx, err := s.Search.Gate.Enter(ctx, string(tenant))
	if err != nil {
		return Refreshed{}, err
	}
	var req RefreshRequest
	if len(body) > 0 {
		if err := cards.DecodeStrict(body, &req); err != nil {
			return Refreshed{}, err
		}
	}
	if err := cards.ValidateAgentID(agentID); err != nil {
		return Refreshed{}, fault.Errorf(fault.NotFound, "card %q: not found", agentID)
	}
	// Authorize before fetching anything: a caller who may not write must not make us call out.
	if err := s.Authz.Check(ctx, string(tenant), authz.CardObject(agentID), authz.ActCardsWrite); err != nil {
		return Refreshed{}, err
	}
	cur, err := s.Store.Get(ctx, tenant, agentID)
	if err != nil {
		return Refreshed{}, err
	}
	if cur.Source == nil || cur.Source.URL == "" {
		return Refreshed{}, fault.Errorf(fault.Conflict, "card %q was not imported from a URL: there is nothing to refresh it from", agentID)
	}
	if s.Fetch == nil {
		return Refreshed{}, fault.New(fault.Invalid, "refresh from a URL is not configured: invalid")
	}
	url := cur.Source.URL
	raw, err := fetchJSON(ctx, s.Fetch, "source", url, MaxImportBytes)
	if err != nil {
		return Refreshed{}, err
	}
	if err := s.checkDepth(raw); err != nil {
		return Refreshed{}, err
	}
	a, format, err := ParseCard(raw)
	if err != nil {
		return Refreshed{}, err
	}
	check := (&verifier{keys: req.Keys, fetch: s.Fetch}).verify(ctx, raw)
	c := ToCard(agentID, a)
	rec := cards.ImportRecord{Format: format, URL: url, Signature: check}
	policy, unread, err := s.weigh(ctx, tenant, c, raw, &rec)
	if err != nil {
		return Refreshed{}, err
	}
	// What was fetched is weighed against the card as it is when it is written: a write that
	// lands during the fetch is read again (the fetch is not repeated), a delete ends it.
	for range maxRefreshAttempts {
		var refused string
		switch {
		case cur.Source == nil || cur.Source.URL != url:
			return Refreshed{}, fault.Errorf(fault.Stale, "card %q was replaced while it was refreshed: revision does not match", agentID)
		case check.Status == cards.SignatureInvalid && !req.AllowInvalidSignature:
			refused = "its signature is invalid (send allowInvalidSignature: true to apply it anyway): " + check.Reason
		case vouched(cur) && !rec.Vouched():
			// A card the tenant's policy vouches for is as good as verified: the issuer's key
			// checked it, whatever keys this refresh was (not) given.
			refused = "the card applied before was verified or trusted, and this one is neither: " + check.Reason
		}
		fresh := &c
		if refused != "" {
			fresh = nil
		}
		card, outcome, err := s.Cards.Refreshed(ctx, tenant, cur, fresh, rec, refused)
		if !errors.Is(err, cards.ErrStale) {
			if err != nil {
				return Refreshed{}, err
			}
			if fresh != nil {
				if card, err = s.settleTrust(ctx, tenant, policy, card, unread); err != nil {
					return Refreshed{}, err
				}
			}
			return Refreshed{Card: card, RefreshOutcome: outcome}, nil
		}
		if cur, err = s.Store.Get(ctx, tenant, agentID); err != nil {
			return Refreshed{}, err
		}
	}
	return Refreshed{}, fault.Errorf(fault.Stale, "card %q changed under %d attempts to refresh it: revision does not match", agentID, maxRefreshAttempts)
}

// vouched reports whether the card as it is now was imported with a signature that verified, or
// is trusted: what a refresh must not lose. Its import record says so (a write of its content
// drops it, and a change of the trust policy rewrites it).
func vouched(c cards.Card) bool {
	return c.A2A != nil && c.A2A.Import != nil && c.A2A.Import.Vouched()
}

// maxRefreshAttempts bounds how often a refresh weighs its fetch against a card written meanwhile.
const maxRefreshAttempts = 8

// GetA2A returns the card an A2A client asks for: a public card to anyone, any other card only
// to a caller of the tenant (or a platform admin) allowed cards:read on it. Everything else is
// cards.ErrNotFound, so an anonymous reader learns nothing about cards it may not see; a tenant
// that does not exist or is suspended answers as one without the card.
func (s *Service) GetA2A(ctx context.Context, tenant tenants.ID, agentID string) (cards.Card, error) {
	if err := authz.Visitor(ctx); err != nil {
		return cards.Card{}, err
	}
	notFound := fault.Errorf(fault.NotFound, "card %q: not found", agentID)
	ctx, err := s.Search.Gate.EnterPublished(ctx, string(tenant))
	if errors.Is(err, tenants.ErrNotFound) {
		return cards.Card{}, notFound
	}
	if err != nil {
		return cards.Card{}, err
	}
	if cards.ValidateAgentID(agentID) != nil {
		return cards.Card{}, notFound
	}
	// From the search index's memory while the database does not answer, as a card GET.
	var memory cards.Memory
	if s.Search != nil && s.Search.Index != nil {
		memory = s.Search.Index
	}
	c, err := cards.Read(ctx, s.Store, memory, tenant, agentID)
	if err != nil {
		return cards.Card{}, err
	}
	if c.Disabled() {
		return cards.Card{}, notFound // kept, but out of service: not offered to A2A clients
	}
	if c.Visibility == cards.VisibilityPublic {
		return c, nil
	}
	p, ok := authz.PrincipalFrom(ctx)
	if !ok || (!p.PlatformAdmin && p.Tenant != string(tenant)) {
		return cards.Card{}, notFound
	}
	err = s.Authz.Check(ctx, string(tenant), authz.CardObject(agentID), authz.ActCardsRead)
	switch {
	case errors.Is(err, authz.ErrForbidden):
		return cards.Card{}, notFound
	case err != nil:
		return cards.Card{}, err
	}
	return c, nil
}
