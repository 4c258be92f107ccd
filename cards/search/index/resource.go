package index

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
)

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

// Covers reports whether the declared resource URI covers the URI asked for, as the search's
// resource filter decides it; a URI that does not parse covers nothing and is covered by nothing.
func Covers(declared, asked string) bool {
	p, err := parseResource(declared)
	if err != nil {
		return false
	}
	r, err := parseResource(asked)
	return err == nil && p.covers(r)
}
