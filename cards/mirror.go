package cards

import (
	"bytes"
	"context"
	"errors"
	"time"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/tenants"
)

// Mirror says where a mirrored card comes from: a source the tenant follows (cards/follow).
type Mirror struct {
	// Source is the id of the tenant's source; Kind its kind.
	Source string `json:"source"`
	Kind   string `json:"kind" enum:"agentcards,ai-catalog,a2a-urls"`
	// URL is the source's URL (an agentcards tenant's, an AI Catalog's), or the card's own A2A
	// card URL when the source lists card URLs.
	URL string `json:"url"`
	// CardURL is the A2A card URL the card was read from, for a card an AI Catalog lists.
	CardURL string `json:"cardUrl,omitempty"`
	// Revision is the card's revision at an agentcards source.
	Revision int64 `json:"revision,omitempty"`
	// SyncedAt is when the sync wrote this revision.
	SyncedAt time.Time `json:"syncedAt"`
}

// The outcomes of Service.Mirror.
const (
	MirrorCreated   = "created"
	MirrorUpdated   = "updated"
	MirrorUnchanged = "unchanged"
	// MirrorConflict: the tenant has a card of the agent that is not the source's mirror (its
	// own, or another source's); it is left as it is.
	MirrorConflict = "conflict"
)

// Following says whether a tenant follows a source; cards/follow's Service is one.
type Following interface {
	Following(ctx context.Context, tenant tenants.ID, source string) (bool, error)
}

// mirrored refuses a write to cur when it is a mirror of a source the tenant follows (Sources
// says; without it, of any source). A mirror left behind by a source no longer followed (one
// that wrote a last card while it was being removed) is the tenant's own.
func (s *Service) mirrored(ctx context.Context, tenant tenants.ID, cur Card) error {
	if cur.Mirror == nil {
		return nil
	}
	if s.Sources != nil {
		following, err := s.Sources.Following(ctx, tenant, cur.Mirror.Source)
		if err != nil {
			return err
		}
		if !following {
			return nil
		}
	}
	return readOnly(cur)
}

// readOnly refuses a write to a mirrored card: it changes only with its source.
func readOnly(c Card) error {
	return fault.Errorf(fault.Conflict, "card %q is a mirror of source %s (%s): it is read-only here; change it at its source, or remove the source: conflict",
		c.AgentID, c.Mirror.Source, c.Mirror.URL)
}

// Mirror writes c, a card read from the tenant's source m.Source, as the mirror m describes
// (with rec, its import record when it was read as an A2A card): it creates the agent's card, or
// replaces the card that is already that source's mirror. A card of the agent that is not (the
// tenant's own, or another source's mirror) is never overwritten: the answer is that card and
// MirrorConflict. A mirror whose content, import record and source revision are what is stored
// writes nothing (MirrorUnchanged), and so does a revision older than the one stored (a change
// the source's feed answered again). c is validated and normalized as every card is; its
// registry fields (visibility, status) are the source's.
func (s *Service) Mirror(ctx context.Context, tenant tenants.ID, c Card, m Mirror, rec *ImportRecord) (Card, string, error) {
	ctx, err := s.enter(ctx, tenant)
	if err != nil {
		return Card{}, "", err
	}
	c.Source, c.Liveness, c.Mirror = nil, nil, nil
	if c.A2A != nil {
		a := *c.A2A
		a.Import = nil
		c.A2A = &a
	}
	if err := ValidateAgentID(c.AgentID); err != nil {
		return Card{}, "", err
	}
	doc, err := prepare(&c)
	if err != nil {
		return Card{}, "", err
	}
	// The card was decoded elsewhere: its free-form values are held to this server's bound here.
	if err := checkCardDepth(doc, s.JSONDepth()); err != nil {
		return Card{}, "", err
	}
	if err := s.Authz.Check(ctx, string(tenant), authz.CardObject(c.AgentID), authz.ActCardsWrite); err != nil {
		return Card{}, "", err
	}
	c.Mirror = &m
	if rec != nil {
		if c.A2A == nil {
			c.A2A = &A2A{}
		}
		r := *rec
		c.A2A.Import = &r
	}
	for attempt := 0; attempt < maxAttempts; attempt++ {
		if !retryPause(ctx, attempt) {
			return Card{}, "", ctx.Err()
		}
		cur, err := s.Store.Get(ctx, tenant, c.AgentID)
		switch {
		case errors.Is(err, ErrNotFound):
			now := s.now()
			next := c
			next.ID, next.CreatedAt, next.UpdatedAt = s.newID(), now, now
			started := time.Now()
			next.Revision, err = s.Store.Create(ctx, tenant, next)
			if errors.Is(err, ErrExists) {
				continue
			}
			if err != nil {
				return Card{}, "", err
			}
			return s.written(ctx, tenant, started, next), MirrorCreated, nil
		case err != nil:
			return Card{}, "", err
		}
		if cur.Mirror == nil || cur.Mirror.Source != m.Source {
			return cur, MirrorConflict, nil
		}
		if m.Revision > 0 && cur.Mirror.Revision > m.Revision {
			return cur, MirrorUnchanged, nil
		}
		if cur.Mirror.Revision == m.Revision && cur.Mirror.URL == m.URL && cur.Mirror.CardURL == m.CardURL &&
			sameContent(cur, c) && sameRecord(importOf(cur), importOf(c)) {
			return cur, MirrorUnchanged, nil
		}
		next := c
		next.ID, next.Revision, next.CreatedAt, next.UpdatedAt = cur.ID, cur.Revision+1, cur.CreatedAt, s.now()
		started := time.Now()
		err = s.Store.Replace(ctx, tenant, next, cur.Revision)
		if errors.Is(err, ErrStale) || errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return Card{}, "", err
		}
		return s.written(ctx, tenant, started, next), MirrorUpdated, nil
	}
	return Card{}, "", contended(c.AgentID)
}

// Unmirror removes the agent's card if it is the mirror of the tenant's source, and (for an
// agentcards source, revision > 0) no newer than revision: the source removed it. It reports
// whether it removed a card; a card that is not the source's mirror is left as it is.
func (s *Service) Unmirror(ctx context.Context, tenant tenants.ID, agentID, source string, revision int64) (bool, error) {
	ctx, err := s.enter(ctx, tenant)
	if err != nil {
		return false, err
	}
	if ValidateAgentID(agentID) != nil {
		return false, nil
	}
	if err := s.Authz.Check(ctx, string(tenant), authz.CardObject(agentID), authz.ActCardsDelete); err != nil {
		return false, err
	}
	for attempt := 0; attempt < maxAttempts; attempt++ {
		if !retryPause(ctx, attempt) {
			return false, ctx.Err()
		}
		cur, err := s.Store.Get(ctx, tenant, agentID)
		switch {
		case errors.Is(err, ErrNotFound):
			return false, nil
		case err != nil:
			return false, err
		}
		if cur.Mirror == nil || cur.Mirror.Source != source || revision > 0 && cur.Mirror.Revision > revision {
			return false, nil
		}
		err = s.Store.Delete(ctx, tenant, agentID, cur.Revision)
		if errors.Is(err, ErrStale) {
			continue
		}
		if errors.Is(err, ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		s.removed(ctx, tenant, agentID)
		return true, nil
	}
	return false, contended(agentID)
}

// Mirrored lists the agent ids of the tenant's cards mirrored from the source, with their
// revisions at the source, reading the cards a batch at a time.
func (s *Service) Mirrored(ctx context.Context, tenant tenants.ID, source string) (map[string]int64, error) {
	ctx, err := s.enter(ctx, tenant)
	if err != nil {
		return nil, err
	}
	if err := s.Authz.Check(ctx, string(tenant), authz.ObjAllCards, authz.ActCardsRead); err != nil {
		return nil, err
	}
	ids, err := s.Store.IDs(ctx, tenant)
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	const batch = 500
	for i := 0; i < len(ids); i += batch {
		got, err := s.Store.GetMany(ctx, tenant, ids[i:min(i+batch, len(ids))])
		if err != nil {
			return nil, err
		}
		for _, c := range got {
			if c.Mirror != nil && c.Mirror.Source == source {
				out[c.AgentID] = c.Mirror.Revision
			}
		}
	}
	return out, nil
}

// SameSignedContent reports whether signed, a card mapped from what its publisher signed, says
// what c says, but for the registry's own fields (status, deprecation, visibility, metadata) and
// what the server records (source, mirror, import record): both are normalized first, as a
// stored card is.
func SameSignedContent(signed, c Card) bool {
	for _, x := range []*Card{&signed, &c} {
		if x.A2A != nil {
			a := *x.A2A
			x.A2A = &a
		}
		x.normalize()
		x.Status, x.Deprecation, x.Visibility, x.Metadata = "", nil, "", nil
	}
	return sameContent(signed, c)
}

// importOf is a card's import record, or nil.
func importOf(c Card) *ImportRecord {
	if c.A2A == nil {
		return nil
	}
	return c.A2A.Import
}

// sameRecord reports whether two import records say the same of a card, apart from when they
// were made: the same format and URL, signature outcome, trust outcome and signed copy.
func sameRecord(a, b *ImportRecord) bool {
	if a == nil || b == nil {
		return a == b
	}
	trust := func(t *TrustCheck) TrustCheck {
		if t == nil {
			return TrustCheck{}
		}
		x := *t
		x.CheckedAt = time.Time{}
		return x
	}
	signed := func(s *SignedCard) [2][]byte {
		if s == nil {
			return [2][]byte{}
		}
		return [2][]byte{s.Card, s.Signatures}
	}
	sa, sb := signed(a.Signed), signed(b.Signed)
	return a.Format == b.Format && a.URL == b.URL && a.Signature == b.Signature && trust(a.Trust) == trust(b.Trust) &&
		bytes.Equal(sa[0], sb[0]) && bytes.Equal(sa[1], sb[1])
}
