package metrics_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentcards/agentcards/cmd/agentcards/app/metrics"
)

// TestIndexesFoldOtherTenants: the index gauges have a series for each of the 20 tenants with the
// most cards (on a tie, the first by id) and one "_other" summing the rest; the count of loaded
// indexes counts them all. Sizes are read at each scrape.
func TestIndexesFoldOtherTenants(t *testing.T) {
	size := func(tenant string, cards int) metrics.TenantSize {
		return metrics.TenantSize{Tenant: tenant, Cards: cards, Bytes: int64(cards) * 1000, CachedCards: 1, CachedBytes: 10,
			CopyCards: cards, CopyBytes: int64(cards) * 10}
	}
	// t01 to t19 hold 101 to 119 cards; alpha and beta 5 each, gamma 2: alpha is the 20th.
	var sizes []metrics.TenantSize
	for i := 1; i <= 19; i++ {
		sizes = append(sizes, size(fmt.Sprintf("t%02d", i), 100+i))
	}
	sizes = append(sizes, size("gamma", 2), size("beta", 5), size("alpha", 5))
	var mu sync.Mutex
	current := sizes
	m := metrics.New("test")
	m.Indexes(func() []metrics.TenantSize {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(current)
	}, func() time.Time { return time.Time{} })

	got := gather(t, m)
	var want []string
	for i := 1; i <= 19; i++ {
		want = append(want, fmt.Sprintf("tenant=t%02d %d", i, 100+i))
	}
	want = append(want, "tenant=_other 7", "tenant=alpha 5")
	slices.Sort(want)
	if s := series(got, "agentcards_index_cards"); !slices.Equal(s, want) {
		t.Errorf("index cards:\n%v\nwant\n%v", s, want)
	}
	// The other gauges: t19's own series, and _other's sums.
	for family, w := range map[string][2]string{
		"agentcards_index_bytes":        {"tenant=t19 119000", "tenant=_other 7000"},
		"agentcards_index_cached_cards": {"tenant=t19 1", "tenant=_other 2"},
		"agentcards_index_cached_bytes": {"tenant=t19 10", "tenant=_other 20"},
		"agentcards_index_copy_cards":   {"tenant=t19 119", "tenant=_other 7"},
		"agentcards_index_copy_bytes":   {"tenant=t19 1190", "tenant=_other 70"},
	} {
		if s := series(got, family); len(s) != 21 || !slices.Contains(s, w[0]) || !slices.Contains(s, w[1]) {
			t.Errorf("%s: %v; want 21 series, with %q and %q", family, s, w[0], w[1])
		}
	}
	if s := series(got, "agentcards_index_tenants"); !slices.Equal(s, []string{" 22"}) {
		t.Errorf("loaded indexes %v, want 22", s)
	}
	if s := got["agentcards_feed_sync_age_seconds"]; s != nil {
		t.Errorf("a follower that never synced has an age: %v", s)
	}

	// At the next scrape, 20 tenants: each its own series, no _other.
	mu.Lock()
	current = sizes[:20]
	mu.Unlock()
	got = gather(t, m)
	if s := series(got, "agentcards_index_cards"); len(s) != 20 || slices.Contains(s, "tenant=_other 0") || !slices.Contains(s, "tenant=gamma 2") {
		t.Errorf("20 tenants: %v", s)
	}
	if s := series(got, "agentcards_index_tenants"); !slices.Equal(s, []string{" 20"}) {
		t.Errorf("loaded indexes %v, want 20", s)
	}
}

// TestFeedAge: the follower's age is the time since its last round that brought every index up
// to date, read at each scrape.
func TestFeedAge(t *testing.T) {
	m := metrics.New("test")
	synced := time.Now().Add(-time.Minute)
	m.Indexes(func() []metrics.TenantSize { return nil }, func() time.Time { return synced })
	got := gather(t, m)
	if s := got["agentcards_feed_sync_age_seconds"]; len(s) != 1 || s[0].value < 60 || s[0].value > 3600 {
		t.Errorf("age %v, want a minute or a little more", s)
	}
	if s := series(got, "agentcards_index_tenants"); !slices.Equal(s, []string{" 0"}) {
		t.Errorf("loaded indexes %v, want 0", s)
	}
}
