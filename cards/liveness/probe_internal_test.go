package liveness

import (
	"testing"
	"time"

	"github.com/agentcards/agentcards/cards"
)

// TestProbeURL: where a card is probed, for each shape of card.
func TestProbeURL(t *testing.T) {
	for _, c := range []struct {
		name     string
		card     cards.Card
		path     string
		want     string
		wantPath string // with path "/health"
	}{
		{name: "endpoint", card: cards.Card{Endpoint: "https://agent.example.com:8443/v1/rpc?key=1#top"},
			want: "https://agent.example.com:8443/.well-known/agent-card.json", wantPath: "https://agent.example.com:8443/health"},
		{name: "imported", card: cards.Card{Endpoint: "https://agent.example.com/rpc", Source: &cards.Source{URL: "https://cards.example.org/a.json"}},
			want: "https://cards.example.org/a.json", wantPath: "https://agent.example.com/health"},
		{name: "imported, no endpoint", card: cards.Card{Source: &cards.Source{URL: "https://cards.example.org/a.json"}},
			want: "https://cards.example.org/a.json", wantPath: ""},
		{name: "imported, source without URL", card: cards.Card{Endpoint: "http://10.0.0.7/rpc", Source: &cards.Source{}},
			want: "http://10.0.0.7/.well-known/agent-card.json", wantPath: "http://10.0.0.7/health"},
		{name: "disabled", card: cards.Card{Endpoint: "https://agent.example.com/rpc", Status: cards.StatusDisabled,
			Source: &cards.Source{URL: "https://cards.example.org/a.json"}}},
		{name: "deprecated", card: cards.Card{Endpoint: "http://agent.example.com/rpc", Status: cards.StatusDeprecated},
			want: "http://agent.example.com/.well-known/agent-card.json", wantPath: "http://agent.example.com/health"},
		{name: "no endpoint", card: cards.Card{}},
		{name: "not HTTP", card: cards.Card{Endpoint: "grpc://agent.example.com:50051"}},
		{name: "no host", card: cards.Card{Endpoint: "http:///rpc"}},
		{name: "not a URL", card: cards.Card{Endpoint: "http://[::1"}},
	} {
		if got := probeURL(c.card, ""); got != c.want {
			t.Errorf("%s: probed at %q, want %q", c.name, got, c.want)
		}
		if got := probeURL(c.card, "/health"); got != c.wantPath {
			t.Errorf("%s, with path /health: probed at %q, want %q", c.name, got, c.wantPath)
		}
	}
}

// TestSecretFor: a probe carries the card's secret (for its endpoint) only when it goes to the
// endpoint's origin: the same scheme, host (in any case) and port (a default one written or not).
func TestSecretFor(t *testing.T) {
	const ep = "https://agent.example.com/v1/rpc"
	for _, c := range []struct {
		endpoint, url string
		same          bool
	}{
		{ep, "https://agent.example.com/.well-known/agent-card.json", true},
		{ep, "https://Agent.Example.COM:443/health", true},
		{"http://10.0.0.7:8080/rpc", "http://10.0.0.7:8080/cards/a.json", true},
		{"http://[::1]:9000/rpc", "http://[::1]:9000/health", true},
		{"http://agent.example.com/rpc", "http://agent.example.com:80/a.json", true},
		{ep, "https://cards.example.org/a.json", false},
		{ep, "https://agent.example.com.evil.example/a.json", false},
		{ep, "http://agent.example.com/.well-known/agent-card.json", false},
		{ep, "https://agent.example.com:8443/health", false},
		{"http://10.0.0.7:8080/rpc", "http://10.0.0.7:8081/health", false},
		{"http://agent.example.com/rpc", "http://agent.example.com:443/a.json", false},
		{ep, "", false},
		{"", "https://agent.example.com/a.json", false},
		{"grpc://agent.example.com:443", "https://agent.example.com/a.json", false},
	} {
		want := ""
		if c.same {
			want = c.endpoint
		}
		if got := secretFor(cards.Card{Endpoint: c.endpoint}, c.url); got != want {
			t.Errorf("endpoint %q, probed at %q: secret for %q, want %q", c.endpoint, c.url, got, want)
		}
	}
}

// TestProbeConfigDefaults: the settings left zero (or below) take the defaults; those set, and
// the interval, path and spread, are kept.
func TestProbeConfigDefaults(t *testing.T) {
	got := ProbeConfig{Interval: time.Minute, Failures: -1, Path: "/health", Spread: -1}.WithDefaults()
	want := ProbeConfig{Interval: time.Minute, Failures: 3, Timeout: 5 * time.Second, Concurrency: 32, PerTenant: 8, Path: "/health", Spread: -1}
	if got != want {
		t.Errorf("defaults: %+v, want %+v", got, want)
	}
	set := ProbeConfig{Failures: 5, Timeout: time.Second, Concurrency: 4, PerTenant: 2}
	if got := set.WithDefaults(); got != set {
		t.Errorf("settings given: %+v, want them kept: %+v", got, set)
	}
}
