package tenants

import (
	"encoding/json"
	"net/netip"
	"strings"
	"time"

	"github.com/agentcards/agentcards/authz/fault"
)

// TrustIssuer is one entry of a tenant's trust policy: the keys that may vouch for the cards
// whose interfaces live on Domain. Exactly one of JWKSURL (the issuer's published key set,
// fetched when a card is weighed) and Keys (a key set pinned in the policy) is set.
type TrustIssuer struct {
	// Domain is a host name ("example.com"), a wildcard for its subdomains ("*.example.com",
	// which does not cover example.com itself), or an IP address.
	Domain string `json:"domain"`
	// JWKSURL is where the issuer publishes its keys.
	JWKSURL string `json:"jwksUrl,omitempty"`
	// Keys is a JWKS pinned in the policy: a key gone from it no longer vouches for anything.
	Keys json.RawMessage `json:"keys,omitempty"`
	// UpdatedAt is when the entry was last written; the server owns it.
	UpdatedAt time.Time `json:"updatedAt"`
}

// TrustPending is a domain of a tenant whose cards a change of its trust policy has yet to weigh
// again, with the number of that change.
type TrustPending struct {
	Tenant ID
	Domain string
	Seq    int64
}

// Bounds of a tenant's trust policy. MaxTrustBytes bounds its entries together as stored.
const (
	MaxTrustIssuers = 100
	MaxTrustBytes   = 256 << 10
)

// NormalizeTrustDomain returns domain as an entry names it (lowercase, without a final dot), or
// an invalid error saying what is wrong with it.
func NormalizeTrustDomain(domain string) (string, error) {
	d := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(domain)), ".")
	if a, err := netip.ParseAddr(strings.Trim(d, "[]")); err == nil {
		return a.String(), nil
	}
	name := strings.TrimPrefix(d, "*.")
	// A name whose last label is all digits is an address, or a part of one, not a host name: a
	// wildcard of it (*.0.1) would cover IP addresses.
	last := name[strings.LastIndexByte(name, '.')+1:]
	ok := name != "" && len(d) <= 253 && strings.Trim(last, "0123456789") != ""
	for label := range strings.SplitSeq(name, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			ok = false
			break
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
				ok = false
			}
		}
	}
	if !ok {
		return "", fault.Errorf(fault.Invalid, "domain %q must be a host name, *. and a host name, or an IP address: invalid", domain)
	}
	return d, nil
}

// TrustCovers reports whether the entry of domain d (normalized) covers host (lowercase, no port):
// a name covers itself, a wildcard every name below its own.
func TrustCovers(d, host string) bool {
	if _, err := netip.ParseAddr(host); err == nil {
		return host == d // an address is nobody's subdomain
	}
	if rest, ok := strings.CutPrefix(d, "*."); ok {
		return strings.HasSuffix(host, "."+rest)
	}
	return host == d
}

// TrustHost is host as trust policies name it: lowercase, without a final dot or brackets, an IP
// address in its canonical form.
func TrustHost(host string) string {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return a.String()
	}
	return host
}

// TrustIssuerFor returns the entry of policy that speaks for host: the entry of that very name,
// else the wildcard of its nearest parent that has one; nil when none does.
func TrustIssuerFor(policy []TrustIssuer, host string) *TrustIssuer {
	host = TrustHost(host)
	var best *TrustIssuer
	for i := range policy {
		e := &policy[i]
		if !TrustCovers(e.Domain, host) {
			continue
		}
		if !strings.HasPrefix(e.Domain, "*.") {
			return e
		}
		if best == nil || len(e.Domain) > len(best.Domain) {
			best = e
		}
	}
	return best
}
