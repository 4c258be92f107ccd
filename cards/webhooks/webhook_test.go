package webhooks_test

import (
	"net/netip"
	"testing"
	"time"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards/webhooks"
)

// TestFilterMatches: no types and no globs take everything; globs match within an id.
func TestFilterMatches(t *testing.T) {
	for _, c := range []struct {
		f       webhooks.Filter
		typ, id string
		want    bool
	}{
		{webhooks.Filter{}, webhooks.TypeRemoved, "any", true},
		{webhooks.Filter{Types: []string{webhooks.TypeUpserted}}, webhooks.TypeRemoved, "any", false},
		{webhooks.Filter{Types: []string{webhooks.TypeUpserted}}, webhooks.TypeUpserted, "any", true},
		{webhooks.Filter{AgentIDs: []string{"billing-*"}}, webhooks.TypeUpserted, "billing-eu", true},
		{webhooks.Filter{AgentIDs: []string{"billing-*"}}, webhooks.TypeUpserted, "sales-eu", false},
		{webhooks.Filter{AgentIDs: []string{"x", "a?c"}}, webhooks.TypeUpserted, "abc", true},
		{webhooks.Filter{Types: []string{webhooks.TypeRemoved}, AgentIDs: []string{"a*"}}, webhooks.TypeUpserted, "abc", false},
	} {
		if got := c.f.Matches(c.typ, c.id); got != c.want {
			t.Errorf("%+v matches %s %s: %v, want %v", c.f, c.typ, c.id, got, c.want)
		}
	}
}

// TestValidateURL: absolute http(s) without credentials; a literal address refused is
// blocked_url, a name is left to the guard at delivery.
func TestValidateURL(t *testing.T) {
	refused := func(a netip.Addr) bool { return a.IsLoopback() || a.IsPrivate() }
	for u, want := range map[string]fault.Kind{
		"https://hooks.example.com/x":   "",
		"http://localhost:8080/x":       "",
		"http://127.0.0.1:8080/":        fault.URLBlocked,
		"http://[::ffff:10.0.0.1]/":     fault.URLBlocked,
		"http://[::1]/":                 fault.URLBlocked,
		"http://93.184.215.14/":         "",
		"ftp://hooks.example.com/":      fault.Invalid,
		"/relative":                     fault.Invalid,
		"https://u:p@hooks.example.com": fault.Invalid,
		"https://hooks.example.com/#x":  fault.Invalid,
		"https:///nohost":               fault.Invalid,
	} {
		if got := fault.KindOf(webhooks.ValidateURL(u, refused)); got != want {
			t.Errorf("%s: %q, want %q", u, got, want)
		}
	}
}

// TestBackoff doubles from the minimum up to the maximum.
func TestBackoff(t *testing.T) {
	c := webhooks.Config{MinBackoff: time.Second, MaxBackoff: 10 * time.Second}.WithDefaults()
	var got []time.Duration
	for f := 1; f <= 6; f++ {
		got = append(got, c.Backoff(f))
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("backoffs %v, want %v", got, want)
		}
	}
	if d := (webhooks.Config{Timeout: time.Minute}).WithDefaults(); d.Lease < 2*time.Minute {
		t.Errorf("a lease shorter than two timeouts: %v", d.Lease)
	}
}
