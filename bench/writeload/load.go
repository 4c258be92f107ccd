package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentcards/agentcards/bench/cardgen"
)

// card is a card document to write, with the columns the server derives from it.
type card struct {
	agentID, name string
	doc           []byte
}

// seedCards returns the n cards a loaded tenant starts with (agent-0000000, ...), generated with
// a fixed seed.
func seedCards(n int) []card {
	out := make([]card, n)
	for i := range out {
		c := cardgen.Make(42, i)
		doc, err := json.Marshal(c)
		if err != nil {
			panic(err) // plain structs of strings always encode
		}
		out[i] = card{agentID: c.AgentID, name: c.Name, doc: doc}
	}
	return out
}

// deck hands out new cards for the writers: a few hundred generated documents whose agentId is
// rewritten with the card's number, so that making one costs a copy and no encoding, the same
// for the server's writers and the baseline's.
type deck struct{ templates []card }

// idPrefix starts every generated document; the eight digits after "w-" are the card's number.
const idPrefix = `{"agentId":"w-00000000"`

func newDeck(seed uint64, n int) *deck {
	d := &deck{templates: make([]card, n)}
	for i := range d.templates {
		c := cardgen.Make(seed, i)
		c.AgentID = "w-00000000"
		doc, err := json.Marshal(c)
		if err != nil {
			panic(err)
		}
		if !bytes.HasPrefix(doc, []byte(idPrefix)) {
			panic("cardgen.Card no longer encodes agentId first")
		}
		d.templates[i] = card{name: c.Name, doc: doc}
	}
	return d
}

// card returns the k-th new card (k < 10^8), agentId w-<k in eight digits>.
func (d *deck) card(k int64) card {
	t := d.templates[int(k%int64(len(d.templates)))]
	id := fmt.Sprintf("w-%08d", k)
	doc := bytes.Clone(t.doc)
	copy(doc[len(`{"agentId":"`):], id)
	return card{agentID: id, name: t.name, doc: doc}
}

// kind is what a request or transaction did.
type kind int

const (
	kindRegister kind = iota
	kindPatch
	kindPut
	kindSearch
	kinds
)

// result is what a phase measured: the latency of each successful operation by kind, the
// failures, and how long the phase took from the first start to the last end.
type result struct {
	lat      [kinds][]time.Duration
	errs     int
	firstErr string
	elapsed  time.Duration
}

func (r *result) add(k kind, d time.Duration) { r.lat[k] = append(r.lat[k], d) }

func (r *result) fail(msg string) {
	if r.errs == 0 {
		r.firstErr = msg
	}
	r.errs++
}

// merge adds o's operations and failures (not its time) to r.
func (r *result) merge(o *result) {
	for k := range r.lat {
		r.lat[k] = append(r.lat[k], o.lat[k]...)
	}
	if r.errs == 0 {
		r.firstErr = o.firstErr
	}
	r.errs += o.errs
}

// latencies returns the sorted latencies of the kinds given.
func (r *result) latencies(ks ...kind) []time.Duration {
	var all []time.Duration
	for _, k := range ks {
		all = append(all, r.lat[k]...)
	}
	slices.Sort(all)
	return all
}

// rate is the operations of the kinds given per second of the phase.
func (r *result) rate(ks ...kind) float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(len(r.latencies(ks...))) / r.elapsed.Seconds()
}

// pct is the q-th percentile (0 < q < 100) of sorted latencies, 0 when there are none.
func pct(sorted []time.Duration, q int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[len(sorted)*q/100]
}

// closedLoop runs n workers, each calling step again as soon as it returns, until d has passed
// or ctx ends; a step under way then finishes. k numbers the steps of the phase from 1, across
// workers. The result is all workers' together, with the phase's wall time.
func closedLoop(ctx context.Context, n int, d time.Duration, step func(w int, k int64, r *result)) result {
	var next atomic.Int64
	var mu sync.Mutex
	var all result
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	for w := range n {
		wg.Go(func() {
			var mine result
			for ctx.Err() == nil && time.Now().Before(deadline) {
				step(w, next.Add(1), &mine)
			}
			mu.Lock()
			all.merge(&mine)
			mu.Unlock()
		})
	}
	wg.Wait()
	all.elapsed = time.Since(start)
	return all
}
