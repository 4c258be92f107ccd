package a2a

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"time"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/aicatalog"
	"github.com/agentcards/agentcards/cards/follow"
	"github.com/agentcards/agentcards/tenants"
)

// Bounds of reading an AI Catalog a tenant follows: the bytes of one document, and how many
// documents and cards one read takes at most. Nesting is bounded by the documents alone: a
// catalog that pages (as this service's do, each page nesting the next) nests a level a page.
const (
	MaxCatalogBytes   = 8 << 20
	MaxCatalogDocs    = 64
	MaxCatalogEntries = 10000
)

var _ follow.CardReader = (*Service)(nil)

// ReadCard reads the A2A card at cardURL (or data, given inline) for a source the tenant follows,
// as an import reads one: mapped to agentID's card, its signatures checked (keys at their jku)
// and weighed against the tenant's trust policy. A card whose signature a key rejects is refused.
func (s *Service) ReadCard(ctx context.Context, tenant tenants.ID, agentID, cardURL string, data json.RawMessage) (cards.Card, cards.ImportRecord, error) {
	raw := []byte(data)
	if len(raw) > MaxImportBytes {
		return cards.Card{}, cards.ImportRecord{}, fault.Errorf(fault.Invalid, "card: the card given inline is over %d bytes: invalid", MaxImportBytes)
	}
	if len(raw) == 0 {
		if s.Fetch == nil {
			return cards.Card{}, cards.ImportRecord{}, fault.New(fault.Invalid, "this server reads no card URLs: invalid")
		}
		var err error
		if raw, err = fetchJSON(ctx, s.Fetch, "card", cardURL, MaxImportBytes); err != nil {
			return cards.Card{}, cards.ImportRecord{}, err
		}
	}
	if err := s.checkDepth(raw); err != nil {
		return cards.Card{}, cards.ImportRecord{}, err
	}
	a, format, err := ParseCard(raw)
	if err != nil {
		return cards.Card{}, cards.ImportRecord{}, err
	}
	v := &verifier{fetch: s.Fetch}
	check := v.verify(ctx, raw)
	if check.Status == cards.SignatureInvalid {
		return cards.Card{}, cards.ImportRecord{}, fault.Errorf(fault.BadSignature, "%s: invalid signature", check.Reason)
	}
	c := ToCard(agentID, a)
	rec := cards.ImportRecord{Format: format, URL: cardURL, Signature: check}
	if _, _, err := s.weigh(ctx, tenant, c, raw, &rec); err != nil {
		return cards.Card{}, cards.ImportRecord{}, err
	}
	return c, rec, nil
}

// WeighMirror weighs a card mirrored from an agentcards source against the tenant's trust
// policy, as an import weighs one: rec is its import record, whose signed copy (what the
// publisher signed) is weighed; its Trust is set to the outcome. The signed copy must say what c
// says (but for the registry's own fields: status, visibility, metadata): a source that put a
// genuine signed copy beside other content gets the card untrusted. A record without a signed
// copy is left as it is.
func (s *Service) WeighMirror(ctx context.Context, tenant tenants.ID, c cards.Card, rec *cards.ImportRecord) error {
	if rec == nil || rec.Signed == nil {
		return nil
	}
	if a, _, err := ParseCard(rec.Signed.Card); err != nil || !cards.SameSignedContent(ToCard(c.AgentID, a), c) {
		rec.Trust = &cards.TrustCheck{Status: cards.TrustUntrusted, Reason: "the card is not what its publisher signed", CheckedAt: time.Now().UTC()}
		return nil
	}
	_, trust, _, err := s.weighImport(ctx, tenant, c, rec.Signed, rec.Signature)
	if err != nil {
		return err
	}
	rec.Trust = trust
	return nil
}

// catalogDoc is as much of an AI Catalog document as following it reads.
type catalogDoc struct {
	SpecVersion string `json:"specVersion"`
	Entries     []struct {
		Identifier string          `json:"identifier"`
		Type       string          `json:"type"`
		URL        string          `json:"url"`
		Data       json.RawMessage `json:"data"`
	} `json:"entries"`
}

// ReadCatalog reads the AI Catalog at catalogURL and answers the A2A cards it lists, by URL
// (made absolute against the document's) or inline, with those of the catalogs it nests, by URL
// or inline, MaxCatalogDocs documents at most; a catalog met twice is read once. Entries of other types
// are skipped. A document that cannot be read, or is not a catalog, fails the whole read, so
// that no card is taken for removed because its page was missing.
func (s *Service) ReadCatalog(ctx context.Context, catalogURL string) ([]follow.Listed, error) {
	if s.Fetch == nil {
		return nil, fault.New(fault.Invalid, "this server reads no catalog URLs: invalid")
	}
	r := catalogRead{s: s, seen: map[string]bool{}}
	if err := r.read(ctx, catalogURL, nil, 0); err != nil {
		return nil, err
	}
	return r.out, nil
}

type catalogRead struct {
	s    *Service
	seen map[string]bool
	docs int
	out  []follow.Listed
}

func (r *catalogRead) read(ctx context.Context, docURL string, inline json.RawMessage, depth int) error {
	if depth > MaxCatalogDocs {
		// Inline catalogs count as deep as fetched ones.
		return fault.Errorf(fault.Invalid, "catalog: %s nests catalogs more than %d deep: invalid", docURL, MaxCatalogDocs)
	}
	raw := []byte(inline)
	if len(raw) == 0 {
		if r.seen[docURL] {
			return nil
		}
		r.seen[docURL] = true
		if r.docs++; r.docs > MaxCatalogDocs {
			return fault.Errorf(fault.Invalid, "catalog: more than %d catalog documents: invalid", MaxCatalogDocs)
		}
		var err error
		if raw, err = fetchJSON(ctx, r.s.Fetch, "catalog", docURL, MaxCatalogBytes); err != nil {
			return err
		}
	}
	var doc catalogDoc
	if err := json.Unmarshal(raw, &doc); err != nil || doc.SpecVersion == "" || doc.Entries == nil {
		return fault.Errorf(fault.Invalid, "catalog: %s is not an AI Catalog document (specVersion and entries): invalid", docURL)
	}
	base, err := url.Parse(docURL)
	if err != nil {
		return fault.Errorf(fault.Invalid, "catalog: %s is not a URL: invalid", docURL)
	}
	for i, e := range doc.Entries {
		if e.Type != aicatalog.TypeA2AAgentCard && e.Type != aicatalog.MediaType {
			continue
		}
		target := ""
		if len(cards.NonNull(e.Data)) == 0 {
			ref, err := url.Parse(e.URL)
			if e.URL == "" || err != nil {
				return fault.Errorf(fault.Invalid, "catalog: %s: entries[%d] has neither url nor data: invalid", docURL, i)
			}
			target = base.ResolveReference(ref).String()
			if err := cards.CheckHTTPURL(fmt.Sprintf("catalog entries[%d].url", i), target); err != nil {
				return err
			}
		}
		if e.Type == aicatalog.MediaType {
			next := target
			if next == "" {
				next = docURL
			}
			if err := r.read(ctx, next, cards.NonNull(e.Data), depth+1); err != nil {
				return err
			}
			continue
		}
		if len(r.out) >= MaxCatalogEntries {
			return fault.Errorf(fault.Invalid, "catalog: more than %d cards: invalid", MaxCatalogEntries)
		}
		r.out = append(r.out, follow.Listed{Identifier: e.Identifier, URL: target, Data: cards.NonNull(e.Data)})
	}
	return nil
}
