package tenants

import (
	"context"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agentcards/agentcards/authz/fault"
)

// SynonymSet is a set of words or phrases that the tenant's searches take as meaning the same:
// a query word (or phrase) that is one of them also finds the cards that say another
// ("translation", "localization", "i18n"). Sets apply when a query is read, so a change takes
// effect at the next search, with no rebuild.
type SynonymSet struct {
	// ID names the set within its tenant.
	ID string `json:"id"`
	// Words are the set's words and phrases, as the tenant admin wrote them.
	Words []string `json:"words"`
	// UpdatedAt is when the set was last written; the server owns it.
	UpdatedAt time.Time `json:"updatedAt"`
}

// Bounds of a tenant's synonyms. MaxSynonymBytes bounds the sets together as stored (their
// JSON), which every replica reads with the tenant's row.
const (
	MaxSynonymSets      = 500
	MaxSynonymWords     = 32
	MaxSynonymWordBytes = 100
	MaxSynonymBytes     = 256 << 10
)

// ValidateSynonymSetID reports whether id can name a synonym set: 1–64 of a–z, 0–9, '_', '.'
// and '-', starting with a letter or digit.
func ValidateSynonymSetID(id string) error {
	ok := id != "" && len(id) <= 64
	for i, r := range id {
		lower := r >= 'a' && r <= 'z' || r >= '0' && r <= '9'
		if !lower && (i == 0 || !strings.ContainsRune("_.-", r)) {
			ok = false
		}
	}
	if !ok {
		return fault.Errorf(fault.Invalid, "id %q must match [a-z0-9][a-z0-9_.-]{0,63}: invalid", id)
	}
	return nil
}

// Validate checks a set as a client sends it: its id, and 2 to MaxSynonymWords distinct words
// (case aside), each 1 to MaxSynonymWordBytes bytes of UTF-8 text with a letter or digit and no
// control character. Words are kept as written, trimmed.
func (s *SynonymSet) Validate() error {
	if err := ValidateSynonymSetID(s.ID); err != nil {
		return err
	}
	if len(s.Words) < 2 || len(s.Words) > MaxSynonymWords {
		return fault.Errorf(fault.Invalid, "words: a set has 2 to %d words, not %d: invalid", MaxSynonymWords, len(s.Words))
	}
	seen := map[string]bool{}
	for i, w := range s.Words {
		w = strings.TrimSpace(w)
		s.Words[i] = w
		switch {
		case w == "":
			return fault.Errorf(fault.Invalid, "words[%d]: must not be empty: invalid", i)
		case len(w) > MaxSynonymWordBytes:
			return fault.Errorf(fault.Invalid, "words[%d]: longer than %d bytes: invalid", i, MaxSynonymWordBytes)
		case !utf8.ValidString(w) || strings.IndexFunc(w, unicode.IsControl) >= 0:
			return fault.Errorf(fault.Invalid, "words[%d]: must be UTF-8 text without control characters: invalid", i)
		case strings.IndexFunc(w, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) < 0:
			return fault.Errorf(fault.Invalid, "words[%d]: %q has no letter or digit: invalid", i, w)
		case seen[strings.ToLower(w)]:
			return fault.Errorf(fault.Invalid, "words[%d]: %q is in the set twice: invalid", i, w)
		}
		seen[strings.ToLower(w)] = true
	}
	return nil
}

type synonymsKey struct{}

type tenantSynonyms struct {
	tenant ID
	sets   []SynonymSet
}

// withSynonyms returns a context carrying the tenant's synonym sets as its row says, for the
// searches of the request; nothing when it has none.
func withSynonyms(ctx context.Context, t Tenant) context.Context {
	if len(t.Synonyms) == 0 {
		return ctx
	}
	return context.WithValue(ctx, synonymsKey{}, tenantSynonyms{tenant: t.ID, sets: t.Synonyms})
}

// SynonymsFrom returns the tenant's synonym sets as the gate (Enter) read them with its row; nil when it has none or ctx passed no gate of that tenant. The sets are shared:
// callers must not change them.
func SynonymsFrom(ctx context.Context, tenant ID) []SynonymSet {
	ts, ok := ctx.Value(synonymsKey{}).(tenantSynonyms)
	if !ok || ts.tenant != tenant {
		return nil
	}
	return ts.sets
}
