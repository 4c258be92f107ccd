package index

import (
	"crypto/sha256"
	"encoding/binary"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/tenants/paging"
)

// Paging bounds of a search.
const (
	DefaultLimit = 20
	MaxLimit     = 100
)

// Query is a search over one tenant's cards. Every filter is all-of; an empty query lists every
// card the caller may read.
type Query struct {
	// Protocols and Tags match case-insensitively; Capabilities by exact name.
	Protocols    []string `json:"protocols"`
	Capabilities []string `json:"capabilities"`
	Tags         []string `json:"tags"`
	// Name is a case-insensitive substring of the card's name; no character is special.
	Name string `json:"name"`
	// Q is free text, ranked.
	Q string `json:"q"`
	// Resources are URIs that the card's resources must cover.
	Resources []string `json:"resources"`
	// Status lists the statuses to find, any of them: by default active and deprecated cards,
	// disabled ones only when asked for.
	Status []string `json:"status"`
	// Verified, when given, finds only the cards whose imported signature verified (true), or
	// only the others (false).
	Verified *bool `json:"verified"`
	// Trusted, when given, finds only the cards an issuer of the tenant's trust policy vouches
	// for (true), or only the others (false).
	Trusted *bool `json:"trusted"`
	// Online, when given, finds only the cards whose agent is online (true), or only those
	// offline or never heard of (false).
	Online *bool `json:"online"`
	// Explain asks, with Q, for each result's Explanation.
	Explain bool `json:"explain"`
	// Page is the page asked for: DefaultLimit and MaxLimit bound it.
	paging.Page
	// Synonyms are the tenant's synonym sets, applied to q (see synonyms.go); the service sets
	// them from the tenant, never a client.
	Synonyms []tenants.SynonymSet `json:"-"`
}

// Shape names what a query asks for, for metrics: the filters given, in a fixed order, joined
// by "+" ("q+capability"), or "list" for none. Values never appear in it.
func (q Query) Shape() string {
	var parts []string
	for _, f := range []struct {
		name string
		on   bool
	}{
		{"q", q.Q != ""}, {"protocol", len(q.Protocols) > 0}, {"capability", len(q.Capabilities) > 0},
		{"tag", len(q.Tags) > 0}, {"name", q.Name != ""}, {"resource", len(q.Resources) > 0},
		{"status", len(q.Status) > 0}, {"verified", q.Verified != nil}, {"trusted", q.Trusted != nil}, {"online", q.Online != nil},
	} {
		if f.on {
			parts = append(parts, f.name)
		}
	}
	if len(parts) == 0 {
		return "list"
	}
	return strings.Join(parts, "+")
}

// Plan is a validated query in the form the matchers use.
type Plan struct {
	protocols, capabilities, tags []string
	name                          string // lowercased
	statuses                      uint8  // the statusBit of each status to find
	verified                      int8   // 1: only verified cards, -1: only the others, 0: any
	trusted                       int8   // 1: only trusted cards, -1: only the others, 0: any
	online                        int8   // 1: only online cards, -1: only the others, 0: any
	resources                     []resourcePattern
	terms                         []term // distinct query tokens of q
	limit                         int
	after                         *Position
	fingerprint                   uint64
	explain                       bool
	basis                         *basis // what the scores were computed from, when explained
}

// term is one distinct word of q: its stem, which it matches whole, and as typed (raw), which
// the word being typed (prefix) also matches as the start of a longer word, or, when no card
// holds it whole (see Plan.settle), as one of its completions (the stems of the words it may
// become that do not begin with it). A word or run of words that is a synonym has members
// instead: the term matches any of them (its own word among them); a run has no text of its own.
type term struct {
	text        string
	raw         string
	prefix      bool
	completions []string
	members     []member
	phrase      string // for a run of words, their stems joined by spaces
}

// minPrefix is the shortest last word that may match as a prefix ("sum" finds "summary").
const minPrefix = 3

// Compile validates q and turns it into a plan; each error names the parameter.
func (q Query) Compile() (Plan, error) {
	var p Plan
	var err error
	if p.limit, err = q.Page.Check(DefaultLimit, MaxLimit); err != nil {
		return Plan{}, err
	}
	if p.protocols, err = normalizeList("protocol", q.Protocols, strings.ToLower); err != nil {
		return Plan{}, err
	}
	if p.tags, err = normalizeList("tag", q.Tags, strings.ToLower); err != nil {
		return Plan{}, err
	}
	if p.capabilities, err = normalizeList("capability", q.Capabilities, func(s string) string { return s }); err != nil {
		return Plan{}, err
	}
	if len(q.Name) > cards.MaxShortText {
		return Plan{}, fault.Errorf(fault.Invalid, "name: longer than %d bytes: invalid", cards.MaxShortText)
	}
	p.name = strings.ToLower(q.Name)
	if p.statuses, err = statusMask(q.Status); err != nil {
		return Plan{}, err
	}
	if q.Verified != nil {
		p.verified = -1
		if *q.Verified {
			p.verified = 1
		}
	}
	p.trusted = triState(q.Trusted)
	if q.Online != nil {
		p.online = -1
		if *q.Online {
			p.online = 1
		}
	}
	for i, r := range q.Resources {
		rp, err := parseResource(r)
		if err != nil {
			return Plan{}, fault.Errorf(fault.Invalid, "resource[%d]: %q %v: invalid", i, r, err)
		}
		p.resources = append(p.resources, rp)
	}
	if len(q.Q) > 1024 {
		return Plan{}, fault.New(fault.Invalid, "q: longer than 1024 bytes: invalid")
	}
	p.terms = queryTerms(q.Q, synonymsOf(q.Synonyms))
	if strings.TrimSpace(q.Q) != "" && len(p.terms) == 0 {
		return Plan{}, fault.New(fault.Invalid, "q: has no letters or digits to search for: invalid")
	}
	if len(p.terms) > 32 {
		return Plan{}, fault.New(fault.Invalid, "q: more than 32 distinct tokens (a compound such as a_b counts as three): invalid")
	}
	p.fingerprint = q.fingerprint(p)
	p.explain = q.Explain
	if q.Cursor != "" {
		pos, err := decodePosition(q.Cursor)
		if err != nil {
			return Plan{}, err
		}
		if pos.Query != p.fingerprint {
			return Plan{}, fault.New(fault.Invalid, "cursor: a cursor of another query (the filters and q must stay the same while paging): invalid")
		}
		p.after = &pos
	}
	return p, nil
}

// queryTerms reads the distinct words of a free-text query, each with its stem. Stopwords are
// dropped unless the query has nothing else. The last word may be a prefix whatever follows it
// ("summar " as well as "summar"). The tenant's synonyms, if any, apply last.
func queryTerms(q string, synonyms *synonymTable) []term {
	var all, kept []term
	seen := map[string]int{}
	text := strings.TrimRightFunc(q, func(r rune) bool { return !isWordRune(r) })
	tokenize(text, func(tok string, atEnd bool) {
		prefix := atEnd && utf8.RuneCountInString(tok) >= minPrefix
		s := stem(tok)
		if i, ok := seen[s]; ok {
			all[i].prefix = all[i].prefix || prefix
			if prefix {
				all[i].raw = tok
			}
			return
		}
		seen[s] = len(all)
		all = append(all, term{text: s, raw: tok, prefix: prefix})
	})
	for _, t := range all {
		if !stopword(t.raw) {
			kept = append(kept, t)
		}
	}
	if len(kept) == 0 {
		kept = all
	}
	if synonyms != nil {
		words, _, raw := phraseWords(q)
		kept = synonyms.expand(kept, words, raw)
	}
	for i := range kept {
		if kept[i].prefix {
			kept[i].completions = completions(kept[i].raw)
		}
	}
	return kept
}

// settle drops the completions of each word being typed that some card holds whole, held
// telling how many (term.df over the tenant's cards): a word the tenant's cards say is taken as
// typed whole, not as one on its way to another word ("model" does not find "mode" by way of
// "modely"). The index and the scan settle a plan once its words' weights are known, before any
// card is scored; its explanations and matched capabilities are read after.
func (p *Plan) settle(held func(t term) int) {
	for i := range p.terms {
		if p.terms[i].completions != nil && held(p.terms[i]) > 0 {
			p.terms[i].completions = nil
		}
	}
}

// normalizeList lowercases (or not), sorts and dedupes a repeatable parameter; empty values are
// refused, since "protocol=" is more likely a bug than a wish to match everything.
func normalizeList(name string, in []string, norm func(string) string) ([]string, error) {
	if len(in) > 32 {
		return nil, fault.Errorf(fault.Invalid, "%s: at most 32 values: invalid", name)
	}
	out := make([]string, 0, len(in))
	for _, v := range in {
		v = norm(strings.TrimSpace(v))
		if v == "" {
			return nil, fault.Errorf(fault.Invalid, "%s: must not be empty: invalid", name)
		}
		if len(v) > cards.MaxShortText {
			return nil, fault.Errorf(fault.Invalid, "%s: longer than %d bytes: invalid", name, cards.MaxShortText)
		}
		out = append(out, v)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// fingerprint identifies the filters of a query (not its page), so a cursor of another query is
// refused instead of silently paging through something else.
func (q Query) fingerprint(p Plan) uint64 {
	h := sha256.New()
	parts := [][]string{p.protocols, p.capabilities, p.tags, {p.name}, q.Resources, {strings.ToLower(q.Q)}}
	if p.statuses != defaultStatuses || p.verified != 0 {
		// Only when asked for, so that the cursors of queries without them stay what they were.
		parts = append(parts, []string{string(rune('0' + p.statuses)), string(rune('1' + p.verified))})
	}
	if p.online != 0 {
		parts = append(parts, []string{"online", string(rune('1' + p.online))})
	}
	if p.trusted != 0 {
		parts = append(parts, []string{"trusted", string(rune('1' + p.trusted))})
	}
	for _, part := range parts {
		for _, s := range part {
			h.Write([]byte(s))
			h.Write([]byte{0})
		}
		h.Write([]byte{1})
	}
	return binary.BigEndian.Uint64(h.Sum(nil))
}

// The statuses as bits of a mask; a card that names none is active.
const (
	bitActive uint8 = 1 << iota
	bitDeprecated
	bitDisabled

	// defaultStatuses are what a search finds unless it asks for statuses: disabled cards are kept
	// out of sight.
	defaultStatuses = bitActive | bitDeprecated
	allStatuses     = bitActive | bitDeprecated | bitDisabled
)

func statusBit(s cards.Status) uint8 {
	switch s {
	case cards.StatusDeprecated:
		return bitDeprecated
	case cards.StatusDisabled:
		return bitDisabled
	}
	return bitActive
}

// statusName is the status of a status bit, as cards keep it (active is none).
func statusName(bit uint8) cards.Status {
	switch bit {
	case bitDeprecated:
		return cards.StatusDeprecated
	case bitDisabled:
		return cards.StatusDisabled
	}
	return ""
}

// statusMask reads the statuses asked for; none asked is the default.
func statusMask(list []string) (uint8, error) {
	if len(list) == 0 {
		return defaultStatuses, nil
	}
	var m uint8
	for _, v := range list {
		switch st := cards.Status(v); st {
		case cards.StatusActive, cards.StatusDeprecated, cards.StatusDisabled:
			m |= statusBit(st)
		default:
			return 0, fault.Errorf(fault.Invalid, "status: %q must be one of active, deprecated, disabled: invalid", v)
		}
	}
	return m, nil
}

// finds reports whether the plan finds a card of the status.
func (p *Plan) finds(s cards.Status) bool { return p.statuses&statusBit(s) != 0 }

// findsOnline reports whether the plan finds a card whose agent is online (or not).
func (p *Plan) findsOnline(online bool) bool {
	return p.online == 0 || (p.online > 0) == online
}

// findsSigned reports whether the plan's verified and trusted filters find a card whose
// signature verified (or not) and that is trusted (or not).
func (p *Plan) findsSigned(verified, trusted bool) bool {
	return (p.verified == 0 || (p.verified > 0) == verified) && (p.trusted == 0 || (p.trusted > 0) == trusted)
}

// signed reports whether the plan has a verified or trusted filter.
func (p *Plan) signed() bool { return p.verified != 0 || p.trusted != 0 }

// triState is a boolean filter as a plan holds it: 1 for true, -1 for false, 0 when not given.
func triState(b *bool) int8 {
	switch {
	case b == nil:
		return 0
	case *b:
		return 1
	}
	return -1
}
