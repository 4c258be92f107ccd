package api_test

import (
	"reflect"
	"testing"

	"github.com/agentcards/agentcards/cards/a2a"
	"github.com/agentcards/agentcards/cards/delegation"
	"github.com/agentcards/agentcards/cards/search"
	"github.com/agentcards/agentcards/cards/webhooks"
	"github.com/agentcards/agentcards/tenants/audit"
	"github.com/agentcards/agentcards/web/api"
	"github.com/agentcards/agentcards/web/catalog"
	"github.com/agentcards/agentcards/web/client"
)

// TestPageBounds: the `min` and `max` tags of each list's limit are the bounds its service
// checks, so that what the doors refuse before sending is what the service would refuse; and
// every limit of a catalogue request has them.
func TestPageBounds(t *testing.T) {
	want := map[reflect.Type]int64{
		reflect.TypeFor[api.CardsSearch]():        search.MaxLimit,
		reflect.TypeFor[api.A2AAgents]():          search.MaxLimit,
		reflect.TypeFor[api.A2ACatalog]():         a2a.CatalogMaxPage,
		reflect.TypeFor[api.DelegationsList]():    delegation.MaxLimit,
		reflect.TypeFor[api.AuditList]():          audit.MaxLimit,
		reflect.TypeFor[api.CardsChanges]():       search.MaxChanges,
		reflect.TypeFor[api.WebhooksDeliveries](): webhooks.MaxDeliveries,
	}
	for _, r := range catalog.Requests {
		for _, f := range client.Fields(r.In) {
			if f.Name != "limit" || f.Type.Kind() != reflect.Int {
				continue
			}
			max, ok := want[r.In]
			if !ok {
				t.Errorf("%s: a limit this test does not know the bounds of", r.Name)
				continue
			}
			if f.Min == nil || *f.Min != 1 || f.Max == nil || *f.Max != max {
				t.Errorf("%s: limit bounded by %v and %v, want 1 and %d", r.Name, f.Min, f.Max, max)
			}
		}
	}
}
