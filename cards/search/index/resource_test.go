package index

import (
	"errors"
	"testing"

	"github.com/agentcards/agentcards/cards"
)

// resourceCover is one case of TestResourceCovers: whether a card declaring the URI declared is
// found by a search for the URI asked.
type resourceCover struct {
	declared, asked string
	want            bool
}

// resourceCovers is the resource filter's rule written out by hand, one (declared, asked) pair
// at a time.
var resourceCovers = []resourceCover{
	// No path, or the path "/", covers every path of that scheme and host:port.
	{"https://api.example.com", "https://api.example.com", true},
	{"https://api.example.com", "https://api.example.com/", true},
	{"https://api.example.com", "https://api.example.com/v1/users/7", true},
	{"https://api.example.com/", "https://api.example.com", true},
	{"https://api.example.com/", "https://api.example.com/v1", true},
	{"https://api.example.com", "https://api.example.com/*", true},
	// Scheme, host and port must be the same place.
	{"https://api.example.com", "http://api.example.com/v1", false},
	{"https://api.example.com", "wss://api.example.com/v1", false},
	{"https://api.example.com", "https://other.example.com/v1", false},
	{"https://api.example.com", "https://v2.api.example.com/v1", false},
	{"https://example.com", "https://api.example.com/", false},
	{"https://api.example.com", "https://api.example.com:8443/v1", false},
	{"https://api.example.com:8443", "https://api.example.com/v1", false},
	{"https://api.example.com:8443/", "https://api.example.com:8443/v1", true},
	{"https://api.example.com:8443", "https://api.example.com:9443/v1", false},
	// The scheme's default port, or an empty one, is the same place as none.
	{"https://api.example.com:443/x", "https://api.example.com/x/y", true},
	{"https://api.example.com/x", "https://api.example.com:443/x", true},
	{"http://api.example.com:80", "http://api.example.com/x", true},
	{"https://api.example.com:/x", "https://api.example.com/x", true},
	{"http://api.example.com:443/", "http://api.example.com/", false},
	{"https://api.example.com:80/", "https://api.example.com/", false},
	{"https://[::1]:443/x", "https://[::1]/x", true},
	{"https://[::1]:8443/x", "https://[::1]/x", false},
	// Scheme and host are case-insensitive, the path is not.
	{"HTTPS://API.Example.COM/x", "https://api.example.com/x/y", true},
	{"https://api.example.com/x", "hTTps://Api.EXAMPLE.com/x", true},
	{"https://api.example.com/Data", "https://api.example.com/data", false},
	{"https://api.example.com/data", "https://api.example.com/DATA/x", false},
	// Userinfo names no other place.
	{"https://bot@api.example.com/x", "https://api.example.com/x", true},
	// A path covers itself and everything below it, segment by segment.
	{"https://h/data", "https://h/data", true},
	{"https://h/data", "https://h/data/x", true},
	{"https://h/data", "https://h/data/x/y", true},
	{"https://h/data", "https://h/database", false},
	{"https://h/data", "https://h/dat", false},
	{"https://h/data", "https://h/", false},
	{"https://h/data", "https://h", false},
	{"https://h/data", "https://h/other/data", false},
	{"https://h/data/x", "https://h/data", false},
	{"https://h/data/x", "https://h/data/y", false},
	// Trailing and doubled slashes do not count.
	{"https://h/data/", "https://h/data", true},
	{"https://h/data/", "https://h/data/x", true},
	{"https://h/data/", "https://h/data/x/y", true},
	{"https://h/data/", "https://h/database", false},
	{"https://h/data", "https://h/data/", true},
	{"https://h/data//", "https://h/data/x", true},
	{"https://h/data", "https://h/data//x", true},
	{"https://h//data", "https://h/data/x", true},
	// /data/* covers what is strictly below /data: not /data itself.
	{"https://h/data/*", "https://h/data/x", true},
	{"https://h/data/*", "https://h/data/x/y", true},
	{"https://h/data/*", "https://h/data", false},
	{"https://h/data/*", "https://h/data/", false},
	{"https://h/data/*", "https://h/database", false},
	{"https://h/data/*", "https://h/database/x", false},
	{"https://h/data/*", "https://h/", false},
	{"https://h/*", "https://h/x", true},
	{"https://h/*", "https://h/", false},
	{"https://h/*", "https://h", false},
	// A pattern asked for is covered by the same pattern, a broader one, or a path at or above.
	{"https://h/data/*", "https://h/data/*", true},
	{"https://h/data/*", "https://h/data/x/*", true},
	{"https://h/data/x/*", "https://h/data/*", false},
	{"https://h/data/*", "https://h/*", false},
	{"https://h/data", "https://h/data/*", true},
	{"https://h/data", "https://h/data/x/*", true},
	{"https://h/", "https://h/*", true},
	{"https://h/data/x", "https://h/data/*", false},
	{"https://h/*", "https://h/data/*", true},
	// A query or fragment names no other resource: ignored on both sides.
	{"https://h/data", "https://h/data?page=2", true},
	{"https://h/data", "https://h/data/x?y=1#top", true},
	{"https://h/data?x=1", "https://h/data/y", true},
	{"https://h/data?x=1", "https://h/data?x=2", true},
	{"https://h/data", "https://h/database?path=/data", false},
	{"https://h/data", "https://h/database#/data", false},
	{"https://h/data/*", "https://h/data?x=/y", false},
	// Percent-encoding: segments compare decoded (so hex case and needless escapes do not
	// count), but an encoded "/" is a character of its segment, not a separator.
	{"https://h/data", "https://h/%64ata/x", true},
	{"https://h/%64ata", "https://h/data", true},
	{"https://h/caf%C3%A9", "https://h/café/x", true},
	{"https://h/a%2fb", "https://h/a%2Fb/c", true},
	{"https://h/a%2Fb", "https://h/a/b", false},
	{"https://h/a", "https://h/a%2Fb", false},
	{"https://h/a/*", "https://h/a%2Fb", false},
	{"https://h/a%2Fb/*", "https://h/a%2Fb/c", true},
	{"https://h/data", "https://h/data%2F", false},
	// Dot segments are resolved before matching (RFC 3986 5.2.4), encoded or not, so ".."
	// never leaves a declared prefix; above the root it stays at the root.
	{"https://h/data", "https://h/data/../secret", false},
	{"https://h/data", "https://h/data/..", false},
	{"https://h/data", "https://h/data/x/../../secret", false},
	{"https://h/data", "https://h/data/%2e%2e/secret", false},
	{"https://h/data", "https://h/data/%2E%2E", false},
	{"https://h/data", "https://h/data/.%2e/secret", false},
	{"https://h/data/*", "https://h/data/x/..", false},
	{"https://h/data/*", "https://h/data/x/../../data/y", true},
	{"https://h/data", "https://h/data/x/../y", true},
	{"https://h/data", "https://h/data/./x", true},
	{"https://h/data", "https://h/data/%2e/x", true},
	{"https://h/data", "https://h/../data/x", true},
	{"https://h/data", "https://h/../../x", false},
	{"https://h/", "https://h/../../x", true},
	{"https://h/data/../secret", "https://h/secret/x", true},
	{"https://h/data/../secret", "https://h/data/x", false},
}

// TestResourceCovers checks the resource filter's rule against resourceCovers: whether a card
// declaring the first URI of each pair is found by a search for the second.
func TestResourceCovers(t *testing.T) {
	for _, c := range resourceCovers {
		d, err := parseResource(c.declared)
		if err != nil {
			t.Errorf("declared %q: %v", c.declared, err)
			continue
		}
		a, err := parseResource(c.asked)
		if err != nil {
			t.Errorf("asked %q: %v", c.asked, err)
			continue
		}
		if got := d.covers(a); got != c.want {
			t.Errorf("%q covers %q: %v, want %v", c.declared, c.asked, got, c.want)
		}
	}
}

// TestResourceRefused lists the URIs a search refuses as a resource, and a card's declared
// resource does not match on: no scheme or host, bad escapes, and an encoded "/" or a "\" that
// would make a dot segment for a server that splits on it (which servers do is not ours to
// guess, and either guess could let ".." leave a declared prefix).
func TestResourceRefused(t *testing.T) {
	for _, raw := range []string{
		"not-a-uri", "/relative/path", "//h/x", "mailto:ops@example.com", "urn:isbn:0451450523", "file:///etc/passwd",
		"https://h/data%", "https://h/data%zz",
		"https://h/data/..%2Fsecret", "https://h/data/x%2F..", "https://h/data/%2e%2e%2fsecret",
		"https://h/data/x%2F.%2Fy", "https://h/data/..%5Csecret", `https://h/data/..\secret`, `https://h/data/x\..`,
	} {
		if _, err := parseResource(raw); err == nil {
			t.Errorf("%q: parsed", raw)
		}
		if _, err := (Query{Resources: []string{raw}}).Compile(); !errors.Is(err, cards.ErrInvalid) {
			t.Errorf("%q in a query: %v, want ErrInvalid", raw, err)
		}
	}
	// An encoded "/" or a "\" without a dot segment beside it is an ordinary character.
	for _, raw := range []string{"https://h/a%2Fb", `https://h/a\b`, "https://h/x%2F...%2Fy", "https://h/..x%2Fy"} {
		if _, err := parseResource(raw); err != nil {
			t.Errorf("%q: %v", raw, err)
		}
	}
}
