package search_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/agentcards/agentcards/authz/authztest"
	"github.com/agentcards/agentcards/bench/cardgen"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/liveness"
	"github.com/agentcards/agentcards/cards/search"
	"github.com/agentcards/agentcards/storage"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/tenants"
)

// BenchmarkSearchOnline: the online filter against the same query without it, at 100k cards in
// SQLite of which every other one has beaten, through the service (the index, the liveness
// tracker, the page's cards). The ratio online/any is the filter's cost; the goal is at
// most 1.2.
func BenchmarkSearchOnline(b *testing.B) {
	const n = 100_000
	ctx := benchCaller
	db := storagetest.Open(b, "sqlite")
	if err := storage.NewTenantStore(db).Create(ctx, tenants.Tenant{ID: "bench", Name: "Bench", Status: tenants.StatusActive,
		CreatedAt: time.Now(), UpdatedAt: time.Now()}, nil); err != nil {
		b.Fatal(err)
	}
	store := storage.NewCardStore(db)
	gate := &tenants.Service{Store: storage.NewTenantStore(db), CacheTTL: 250 * time.Millisecond}
	svc := &cards.Service{Store: store, Gate: gate, Authz: authztest.AllowAll{}}
	docs := cardgen.Documents(42, n)
	for start := 0; start < n; start += cards.MaxBatch {
		body := append([]byte("["), bytes.Join(docs[start:min(n, start+cards.MaxBatch)], []byte(","))...)
		if _, err := svc.RegisterBatch(ctx, "bench", append(body, ']')); err != nil {
			b.Fatal(err)
		}
	}
	// Every other card beats: half the tenant is online.
	ids, err := store.IDs(ctx, "bench")
	if err != nil {
		b.Fatal(err)
	}
	lstore := storage.NewLivenessStore(db)
	now := time.Now().UTC()
	for start := 0; start < len(ids); start += 2000 {
		cs, err := store.GetMany(ctx, "bench", ids[start:min(len(ids), start+2000)])
		if err != nil {
			b.Fatal(err)
		}
		var beats []liveness.Record
		for i, c := range cs {
			if i%2 == 0 {
				beats = append(beats, liveness.Record{Tenant: "bench", AgentID: c.AgentID, CardID: c.ID, SeenAt: now, UpdatedAt: now})
			}
		}
		if err := lstore.SaveBeats(ctx, beats); err != nil {
			b.Fatal(err)
		}
	}
	tracker := liveness.New(lstore, time.Hour, nil)
	finder := &search.Service{Store: store, Gate: gate, Authz: authztest.AllowAll{}, Index: search.NewIndex(store, store), Liveness: tracker}
	middle := cardgen.Make(42, n/2)
	online := true
	for _, q := range []struct {
		name string
		q    search.Query
	}{
		{"all", search.Query{}},
		{"capability", search.Query{Capabilities: []string{middle.Capabilities[0].Name}}},
		{"q-3-words", search.Query{Q: "invoice forecast summar"}},
	} {
		for _, filter := range []string{"any", "online"} {
			query := q.q
			if filter == "online" {
				query.Online = &online
			}
			b.Run(q.name+"/"+filter, func(b *testing.B) {
				r, err := finder.Search(ctx, "bench", query) // builds the index, loads the liveness
				if err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					if _, err := finder.Search(ctx, "bench", query); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(r.Total), "matches")
			})
		}
	}
}
