package follow_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/follow"
	"github.com/agentcards/agentcards/tenants"
)

// TestSpecValidate: each kind takes what it needs and refuses the rest, with the field named.
func TestSpecValidate(t *testing.T) {
	refused := func(host string) bool { return host == "10.0.0.1" }
	cases := []struct {
		spec follow.Spec
		kind fault.Kind
		says string
	}{
		{follow.Spec{Kind: "agentcards", URL: "https://reg.example.com/v1/tenants/acme/", Token: "t"}, "", ""},
		{follow.Spec{Kind: "agentcards", URL: "https://reg.example.com/base/v1/tenants/acme"}, "", ""},
		{follow.Spec{Kind: "agentcards", URL: "http://127.0.0.1:8080/v1/tenants/acme", Token: "t"}, "", ""},
		{follow.Spec{Kind: "agentcards", URL: "http://reg.example.com/v1/tenants/acme", Token: "t"}, fault.Invalid, "https"},
		{follow.Spec{Kind: "agentcards", URL: "https://reg.example.com/v1/tenants/acme/cards"}, fault.Invalid, "a tenant's URL"},
		{follow.Spec{Kind: "agentcards", URL: "https://reg.example.com/v1/tenants/acme?x=1"}, fault.Invalid, "a tenant's URL"},
		{follow.Spec{Kind: "agentcards", URL: "https://reg.example.com/v1/tenants/Not_A_Tenant"}, fault.Invalid, "url: the tenant"},
		{follow.Spec{Kind: "agentcards", URL: "https://reg.example.com/v1/tenants/acme", Interval: 60}, fault.Invalid, "intervalSeconds"},
		{follow.Spec{Kind: "agentcards", URL: "https://10.0.0.1/v1/tenants/acme"}, fault.URLBlocked, "url"},
		{follow.Spec{Kind: "ai-catalog", URL: "https://example.com/.well-known/ai-catalog.json", Interval: 10}, "", ""},
		{follow.Spec{Kind: "ai-catalog", URL: "https://example.com/c.json", Interval: 9}, fault.Invalid, "intervalSeconds"},
		{follow.Spec{Kind: "ai-catalog", URL: "https://example.com/c.json", Interval: 18446744084}, fault.Invalid, "intervalSeconds"},
		{follow.Spec{Kind: "ai-catalog", URL: "https://example.com/c.json", Interval: 86401}, fault.Invalid, "intervalSeconds"},
		{follow.Spec{Kind: "ai-catalog", URL: "https://example.com/c.json", Token: "t"}, fault.Invalid, "token"},
		{follow.Spec{Kind: "ai-catalog", URL: "ftp://example.com/c.json"}, fault.Invalid, "url"},
		{follow.Spec{Kind: "ai-catalog", URLs: []string{"https://example.com/a.json"}}, fault.Invalid, "urls"},
		{follow.Spec{Kind: "a2a-urls", URLs: []string{"https://a.example.com/card.json"}}, "", ""},
		{follow.Spec{Kind: "a2a-urls"}, fault.Invalid, "urls"},
		{follow.Spec{Kind: "a2a-urls", URL: "https://a.example.com/card.json"}, fault.Invalid, "url"},
		{follow.Spec{Kind: "a2a-urls", URLs: []string{"https://a.example.com/c.json", "https://a.example.com/c.json"}}, fault.Invalid, "urls[1]"},
		{follow.Spec{Kind: "a2a-urls", URLs: []string{"https://a.example.com/c.json", "not a url"}}, fault.Invalid, "urls[1]"},
		{follow.Spec{Kind: "a2a-urls", URLs: []string{"https://a.example.com/c.json", "https://10.0.0.1/c.json"}}, fault.URLBlocked, "urls[1]"},
		{follow.Spec{Kind: "ftp", URL: "https://example.com"}, fault.Invalid, "kind"},
		{follow.Spec{URL: "https://example.com"}, fault.Invalid, "kind: required"},
	}
	for _, c := range cases {
		got, err := c.spec.Validate(refused, func(host string) bool { return host == "127.0.0.1" })
		if fault.KindOf(err) != c.kind || c.says != "" && !strings.Contains(fault.MessageOf(err), c.says) {
			t.Errorf("%+v: %v, want %q naming %q", c.spec, err, c.kind, c.says)
		}
		if err == nil && c.spec.Kind == "agentcards" && strings.HasSuffix(got.URL, "/") {
			t.Errorf("%+v: stored as %q", c.spec, got.URL)
		}
		if err == nil && c.spec.Kind != "agentcards" && c.spec.Interval == 0 && got.Interval != 300 {
			t.Errorf("%+v: an interval of %d, want the default 300", c.spec, got.Interval)
		}
	}
}

// TestAgentIDFor: an identifier's last segment when it is an agent id, else the URL's host and
// path without the well-known name; always a valid agent id.
func TestAgentIDFor(t *testing.T) {
	cases := []struct{ identifier, url, want string }{
		{"urn:agentcards:acme:code-reviewer", "https://x.example.com/a2a/acme/code-reviewer/.well-known/agent-card.json", "code-reviewer"},
		{"https://agents.example.com/ids/planner", "", "planner"},
		{"urn:example:has space", "https://agents.example.com/travel/.well-known/agent-card.json", "agents.example.com-travel"},
		{"", "https://agents.example.com/.well-known/agent.json", "agents.example.com"},
		{"", "https://agents.example.com/cards/weather.json", "agents.example.com-cards-weather"},
		{"", "http://127.0.0.1:8080/x/.well-known/agent-card.json", "127.0.0.1-x"},
		{"", "", "card-"},
	}
	for _, c := range cases {
		got := follow.AgentIDFor(c.identifier, c.url)
		if !strings.HasPrefix(got, c.want) || (c.want != "card-" && got != c.want) || cards.ValidateAgentID(got) != nil {
			t.Errorf("AgentIDFor(%q, %q) = %q, want %q", c.identifier, c.url, got, c.want)
		}
	}
	long := "https://agents.example.com/" + strings.Repeat("segment/", 40) + "card.json"
	if got := follow.AgentIDFor("", long); len(got) > 128 || cards.ValidateAgentID(got) != nil || got == follow.AgentIDFor("", long+"x") {
		t.Errorf("a long URL: %q", got)
	}
}

// TestBackoff: a second doubled each failure, at most MaxBackoff.
func TestBackoff(t *testing.T) {
	c := follow.Config{}.WithDefaults()
	for failures, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 5: 16 * time.Second, 9: 256 * time.Second, 10: 5 * time.Minute, 100: 5 * time.Minute} {
		if got := c.Backoff(failures); got != want {
			t.Errorf("Backoff(%d) = %s, want %s", failures, got, want)
		}
	}
}

// TestSealer: a token opens only for the tenant, source and URL it was sealed for, and only with
// its key.
func TestSealer(t *testing.T) {
	key := make([]byte, 32)
	s, err := follow.NewSealer(key)
	if err != nil {
		t.Fatal(err)
	}
	src := follow.Source{ID: "src_01", URL: "https://reg.example.com/v1/tenants/acme"}
	sealed := s.Seal("t1", src, "the-token")
	if strings.Contains(sealed, "the-token") {
		t.Fatal("sealed in the clear")
	}
	if got, err := s.Open("t1", src, sealed); err != nil || got != "the-token" {
		t.Fatalf("Open = %q, %v", got, err)
	}
	moved := src
	moved.URL = "https://evil.example.com/v1/tenants/acme"
	for _, c := range []struct {
		tenant tenants.ID
		src    follow.Source
	}{{"t2", src}, {"t1", follow.Source{ID: "src_02", URL: src.URL}}, {"t1", moved}} {
		if _, err := s.Open(c.tenant, c.src, sealed); err == nil {
			t.Errorf("opened for %s %+v", c.tenant, c.src)
		}
	}
	other, _ := follow.NewSealer(append(make([]byte, 31), 1))
	if _, err := other.Open("t1", src, sealed); err == nil {
		t.Error("opened with another key")
	}
	if _, err := follow.NewSealer(make([]byte, 16)); err == nil {
		t.Error("a 16-byte key taken")
	}
}
