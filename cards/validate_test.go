package cards

import (
	"regexp"
	"strings"
	"testing"
)

// The regular expressions the identifiers' messages give, against which their patterns are tested.
var identifierRegexps = map[string]struct {
	p  charPattern
	re *regexp.Regexp
}{
	"agentId":    {agentIDPattern, regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)},
	"capability": {capabilityPattern, regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,128}$`)},
	"protocol":   {protocolPattern, regexp.MustCompile(`^[a-z0-9][a-z0-9._+-]{0,31}$`)},
}

var identifiers = []string{
	"", "a", "A", "0", "_", ".", "-", ":", "+", "agt_1.x-y", "ns:review_pr.v1", "a2a", "json-rpc+2.0",
	"-bad", "has space", "HTTP", "é", "a\n", "\na", "a\x00", "ab\xff", strings.Repeat("a", 31),
	strings.Repeat("a", 32), strings.Repeat("a", 33), strings.Repeat("b", 127), strings.Repeat("b", 128),
	strings.Repeat("b", 129), "x,y", "x/y", "x*", "[a]", "a^", "Z~",
}

// TestIdentifierPatterns: each identifier pattern accepts exactly what its regular expression does.
func TestIdentifierPatterns(t *testing.T) {
	for _, s := range identifiers {
		samePattern(t, s)
	}
	for c := range 256 {
		samePattern(t, string([]byte{byte(c)}))
		samePattern(t, "a"+string([]byte{byte(c)}))
	}
}

func FuzzIdentifierPatterns(f *testing.F) {
	for _, s := range identifiers {
		f.Add(s)
	}
	f.Fuzz(samePattern)
}

func samePattern(t *testing.T, s string) {
	t.Helper()
	for name, c := range identifierRegexps {
		if got, want := c.p.MatchString(s), c.re.MatchString(s); got != want {
			t.Errorf("%s pattern on %q: %v, the regexp says %v", name, s, got, want)
		}
	}
}
