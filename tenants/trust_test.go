package tenants_test

import (
	"testing"

	"github.com/agentcards/agentcards/tenants"
)

// TestTrustDomains: what a policy's domain may be, its one form, and which hosts it covers.
func TestTrustDomains(t *testing.T) {
	for in, want := range map[string]string{
		"Example.COM.": "example.com", "*.Example.com": "*.example.com", "localhost": "localhost",
		"10.0.0.1": "10.0.0.1", "[::1]": "::1", "0:0::1": "::1", "a-b.example": "a-b.example",
	} {
		if got, err := tenants.NormalizeTrustDomain(in); err != nil || got != want {
			t.Errorf("NormalizeTrustDomain(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "*.", "*", "a.*.example.com", "https://example.com", "example.com:443", "exa_mple.com",
		"-x.example", "x-.example", "*.0.1", "*.10.0.0.1", "a..b", "\x00"} {
		if got, err := tenants.NormalizeTrustDomain(bad); err == nil {
			t.Errorf("NormalizeTrustDomain(%q) = %q, want it refused", bad, got)
		}
	}
	for _, c := range []struct {
		domain, host string
		covers       bool
	}{
		{"example.com", "example.com", true}, {"example.com", "a.example.com", false},
		{"*.example.com", "a.example.com", true}, {"*.example.com", "a.b.example.com", true},
		{"*.example.com", "example.com", false}, {"*.example.com", "badexample.com", false},
		{"10.0.0.1", "10.0.0.1", true}, {"::1", "::1", true},
	} {
		if got := tenants.TrustCovers(c.domain, tenants.TrustHost(c.host)); got != c.covers {
			t.Errorf("TrustCovers(%q, %q) = %v", c.domain, c.host, got)
		}
	}
	policy := []tenants.TrustIssuer{{Domain: "*.example.com"}, {Domain: "*.a.example.com"}, {Domain: "b.a.example.com"}, {Domain: "::1"}}
	for host, want := range map[string]string{
		"x.example.com": "*.example.com", "x.a.example.com": "*.a.example.com", "B.A.example.com.": "b.a.example.com",
		"[0:0::1]": "::1", "example.com": "", "other.org": "",
	} {
		got := ""
		if e := tenants.TrustIssuerFor(policy, host); e != nil {
			got = e.Domain
		}
		if got != want {
			t.Errorf("TrustIssuerFor(%q) = %q, want %q", host, got, want)
		}
	}
}
