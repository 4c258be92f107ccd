package search

import (
	"context"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/tenants"
)

// buildBatch is how many cards one query reads for an index build; scanBatch for the other
// reads of many cards (syncs, scans, and the list of public cards, which may stop after a batch).
const (
	buildBatch = 2000
	scanBatch  = 500
)

// getInBatches reads the cards of ids, scanBatch at a time, and hands each batch to fn.
func getInBatches(ctx context.Context, store cards.Store, tenant tenants.ID, ids []string, fn func([]cards.Card)) error {
	for start := 0; start < len(ids); start += scanBatch {
		batch, err := store.GetMany(ctx, tenant, ids[start:min(start+scanBatch, len(ids))])
		if err != nil {
			return err
		}
		fn(batch)
	}
	return nil
}

// loadInBatches is getInBatches for a build: the next batches are read (and decoded) while the
// current one is indexed, a few at a time, and handed to fn in order.
func loadInBatches(ctx context.Context, store cards.Store, tenant tenants.ID, ids []string, fn func([]cards.Card)) error {
	type result struct {
		cards []cards.Card
		err   error
	}
	const ahead = 2 // reads in flight beside the indexing
	batches := (len(ids) + buildBatch - 1) / buildBatch
	results := make([]chan result, batches)
	for i := range results {
		results[i] = make(chan result, 1)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	slots := make(chan struct{}, ahead)
	go func() {
		for i := range batches {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return
			}
			go func() {
				batch, err := store.GetMany(ctx, tenant, ids[i*buildBatch:min((i+1)*buildBatch, len(ids))])
				results[i] <- result{batch, err}
			}()
		}
	}()
	for i := range batches {
		var r result
		select {
		case r = <-results[i]:
		case <-ctx.Done():
			return ctx.Err()
		}
		<-slots
		if r.err != nil {
			return r.err
		}
		fn(r.cards)
	}
	return nil
}
