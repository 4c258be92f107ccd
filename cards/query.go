package cards

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"
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
	Limit     int      `json:"limit"`
	Cursor    string   `json:"cursor"`
}

// Hit is one card of a search answer. Score and MatchedCapabilities are set only for a q search;
// MatchedResources, the declared resource URIs that covered a URI asked for, only for a search
// by resource.
type Hit struct {
	Card                Card     `json:"card"`
	Score               *float64 `json:"score,omitempty"`
	MatchedCapabilities []string `json:"matchedCapabilities,omitempty"`
	MatchedResources    []string `json:"matchedResources,omitempty"`
	raw                 []byte   // Card encoded, when known
}

// Result is one page of a search. Total counts every match, not the page.
type Result struct {
	Total      int    `json:"total"`
	Items      []Hit  `json:"items"`
	NextCursor string `json:"nextCursor,omitempty"`
}

// plan is a validated query in the form the matchers use.
type plan struct {
	protocols, capabilities, tags []string
	name                          string // lowercased
	resources                     []resourcePattern
	terms                         []term // distinct query tokens of q
	limit                         int
	after                         *position
	fingerprint                   uint64
}

// term is one distinct token of q. prefix: it is the word being typed and may match as a prefix.
type term struct {
	text   string
	prefix bool
}

// position is where a page ends, in the order of the answer (see less). Without q, only agentId
// counts.
type position struct {
	Matched int    `json:"m,omitempty"`
	Exact   int    `json:"e,omitempty"`
	Weight  int    `json:"w,omitempty"`
	AgentID string `json:"a"`
	Query   uint64 `json:"f"`
}

// before reports whether the position comes before c in answer order.
func (p position) before(c candidate) bool {
	return less(candidate{agentID: p.AgentID, matched: p.Matched, exact: p.Exact, weight: p.Weight}, c)
}

// minPrefix is the shortest last word that may match as a prefix ("sum" finds "summary").
const minPrefix = 3

// compile validates q and turns it into a plan; each error names the parameter.
func (q Query) compile() (plan, error) {
	p := plan{limit: q.Limit}
	if p.limit == 0 {
		p.limit = DefaultLimit
	}
	if p.limit < 1 || p.limit > MaxLimit {
		return plan{}, fmt.Errorf("limit: must be between 1 and %d, got %d: %w", MaxLimit, q.Limit, ErrInvalid)
	}
	var err error
	if p.protocols, err = normalizeList("protocol", q.Protocols, strings.ToLower); err != nil {
		return plan{}, err
	}
	if p.tags, err = normalizeList("tag", q.Tags, strings.ToLower); err != nil {
		return plan{}, err
	}
	if p.capabilities, err = normalizeList("capability", q.Capabilities, func(s string) string { return s }); err != nil {
		return plan{}, err
	}
	if len(q.Name) > maxShortText {
		return plan{}, fmt.Errorf("name: longer than %d bytes: %w", maxShortText, ErrInvalid)
	}
	p.name = strings.ToLower(q.Name)
	for i, r := range q.Resources {
		rp, err := parseResource(r)
		if err != nil {
			return plan{}, fmt.Errorf("resource[%d]: %q %v: %w", i, r, err, ErrInvalid)
		}
		p.resources = append(p.resources, rp)
	}
	if len(q.Q) > 1024 {
		return plan{}, fmt.Errorf("q: longer than 1024 bytes: %w", ErrInvalid)
	}
	seen := map[string]int{}
	// The last word may be a prefix whatever follows it ("summar " as well as "summar").
	text := strings.TrimRightFunc(q.Q, func(r rune) bool { return !isWordRune(r) })
	tokenize(text, func(tok string, atEnd bool) {
		prefix := atEnd && utf8.RuneCountInString(tok) >= minPrefix
		if i, ok := seen[tok]; ok {
			p.terms[i].prefix = p.terms[i].prefix || prefix
			return
		}
		seen[tok] = len(p.terms)
		p.terms = append(p.terms, term{text: tok, prefix: prefix})
	})
	if strings.TrimSpace(q.Q) != "" && len(p.terms) == 0 {
		return plan{}, fmt.Errorf("q: has no letters or digits to search for: %w", ErrInvalid)
	}
	if len(p.terms) > 32 {
		return plan{}, fmt.Errorf("q: more than 32 distinct tokens (a compound such as a_b counts as three): %w", ErrInvalid)
	}
	p.fingerprint = q.fingerprint(p)
	if q.Cursor != "" {
		pos, err := decodePosition(q.Cursor)
		if err != nil {
			return plan{}, fmt.Errorf("cursor: not a cursor (pass nextCursor as it came): %w", ErrInvalid)
		}
		if pos.Query != p.fingerprint {
			return plan{}, fmt.Errorf("cursor: a cursor of another query (the filters and q must stay the same while paging): %w", ErrInvalid)
		}
		p.after = &pos
	}
	return p, nil
}

// normalizeList lowercases (or not), sorts and dedupes a repeatable parameter; empty values are
// refused, since "protocol=" is more likely a bug than a wish to match everything.
func normalizeList(name string, in []string, norm func(string) string) ([]string, error) {
	if len(in) > 32 {
		return nil, fmt.Errorf("%s: at most 32 values: %w", name, ErrInvalid)
	}
	out := make([]string, 0, len(in))
	for _, v := range in {
		v = norm(strings.TrimSpace(v))
		if v == "" {
			return nil, fmt.Errorf("%s: must not be empty: %w", name, ErrInvalid)
		}
		if len(v) > maxShortText {
			return nil, fmt.Errorf("%s: longer than %d bytes: %w", name, maxShortText, ErrInvalid)
		}
		out = append(out, v)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// fingerprint identifies the filters of a query (not its page), so a cursor of another query is
// refused instead of silently paging through something else.
func (q Query) fingerprint(p plan) uint64 {
	h := sha256.New()
	for _, part := range [][]string{p.protocols, p.capabilities, p.tags, {p.name}, q.Resources, {strings.ToLower(q.Q)}} {
		for _, s := range part {
			h.Write([]byte(s))
			h.Write([]byte{0})
		}
		h.Write([]byte{1})
	}
	return binary.BigEndian.Uint64(h.Sum(nil))
}

func encodePosition(p position) string {
	b, _ := json.Marshal(p)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodePosition(s string) (position, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return position{}, err
	}
	var p position
	if err := json.Unmarshal(b, &p); err != nil || p.AgentID == "" ||
		p.Matched < 0 || p.Matched > 32 || p.Exact < 0 || p.Exact > p.Matched || p.Weight < 0 || p.Weight > 3*p.Matched {
		return position{}, fmt.Errorf("bad cursor")
	}
	return p, nil
}

// resourcePattern is a parsed resource URI in the form covers compares. Its query and fragment
// are dropped: they name no other resource.
type resourcePattern struct {
	scheme string // lowercased
	host   string // lowercased, with its port unless it is empty or the scheme's default
	// segments are the path's segments, each percent-decoded, with dot segments resolved
	// (RFC 3986 5.2.4) and empty ones dropped: "/data/", "/data//" and "/x/../data" are "/data".
	segments []string
	wildcard bool // the path ended in "/*": it covers what is strictly below segments
}

// defaultPorts are the ports that name the same place as no port.
var defaultPorts = map[string]string{"http": "80", "https": "443"}

func parseResource(raw string) (resourcePattern, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return resourcePattern{}, fmt.Errorf("is not an absolute URI with a host")
	}
	rp := resourcePattern{scheme: strings.ToLower(u.Scheme), host: strings.ToLower(u.Hostname())}
	if port := u.Port(); port != "" && port != defaultPorts[rp.scheme] {
		rp.host = net.JoinHostPort(rp.host, port)
	}
	// Split the path as written: an encoded "/" (%2F) is a character of its segment, not a
	// separator (RFC 3986 2.2), so "/a%2Fb" is not below "/a".
	for _, esc := range strings.Split(u.EscapedPath(), "/") {
		seg, err := url.PathUnescape(esc)
		if err != nil {
			return resourcePattern{}, fmt.Errorf("has a bad escape in its path")
		}
		// A server that splits on an encoded "/" or on "\" would see a dot segment here, and
		// might resolve it out of a prefix this segment is below: refuse rather than guess.
		if strings.ContainsAny(seg, "/\\") && slices.ContainsFunc(strings.FieldsFunc(seg, isPathSeparator), isDotSegment) {
			return resourcePattern{}, fmt.Errorf("hides a dot segment behind an encoded / or a \\ in its path")
		}
		switch seg {
		case "", ".":
		case "..":
			if n := len(rp.segments); n > 0 {
				rp.segments = rp.segments[:n-1]
			}
		default:
			rp.segments = append(rp.segments, seg)
		}
	}
	if n := len(rp.segments); n > 0 && rp.segments[n-1] == "*" {
		rp.wildcard = true
		rp.segments = rp.segments[:n-1]
	}
	return rp, nil
}

func isPathSeparator(r rune) bool { return r == '/' || r == '\\' }

func isDotSegment(s string) bool { return s == "." || s == ".." }

// covers reports whether the declared resource p covers the URI r asked for: same scheme and
// host:port, and p's path is r's path or above it, segment by segment (so /data covers
// /data/x/y but never /database). A pattern ".../*" covers only what is strictly below its
// prefix, not the prefix itself; an asked pattern is covered by the same pattern, a broader one,
// or a path at or above its prefix.
func (p resourcePattern) covers(r resourcePattern) bool {
	if p.scheme != r.scheme || p.host != r.host || len(r.segments) < len(p.segments) {
		return false
	}
	if p.wildcard && !r.wildcard && len(r.segments) == len(p.segments) {
		return false
	}
	return slices.Equal(p.segments, r.segments[:len(p.segments)])
}
