package search

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/web/webtest"
)

// slowStore answers the first batch at once, fails the batch starting with failAt (if set), and
// holds every other read until its context ends. Batches are told apart by their first id, not
// by the order the reads arrive in, which the scheduler decides.
type slowStore struct {
	feedModel
	calls  atomic.Int32
	failAt string
}

func (s *slowStore) GetMany(ctx context.Context, tenant tenants.ID, ids []string) ([]cards.Card, error) {
	s.calls.Add(1)
	switch {
	case ids[0] == "0":
		return []cards.Card{{AgentID: ids[0]}}, nil
	case ids[0] == s.failAt:
		return nil, errors.New("boom")
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestLoadInBatchesStops: a build whose context ends, or whose read fails while others are in
// flight, returns that error promptly and leaves no goroutine behind.
func TestLoadInBatchesStops(t *testing.T) {
	ids := make([]string, 10*buildBatch)
	for i := range ids {
		ids[i] = fmt.Sprint(i)
	}
	before := runtime.NumGoroutine()
	// cancellation while reads block
	s := &slowStore{}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	err := loadInBatches(ctx, s, "t", ids, func([]cards.Card) {})
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("cancelled build: %v after %d reads", err, s.calls.Load())
	}
	// an error while others are in flight
	s = &slowStore{failAt: fmt.Sprint(buildBatch)} // the second batch
	err = loadInBatches(context.Background(), s, "t", ids, func([]cards.Card) {})
	if err == nil || err.Error() != "boom" {
		t.Fatalf("failed read: %v after %d reads", err, s.calls.Load())
	}
	// The reads still in flight return once they see the cancellation; wait for that, as
	// long as a loaded machine may need.
	webtest.Eventually(t, 10*time.Second, "goroutines back to their number before the builds", func() bool {
		return runtime.NumGoroutine() <= before
	})
}
