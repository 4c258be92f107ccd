package index

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentcards/agentcards/tenants/paging"
)

// BenchmarkIndexSearchLoad measures free-text searches as bench/bigtenant sends them (1 to 3
// words drawn from one card's description, limit 10) from 16 goroutines at once on the index
// alone, at the sizes of benchSizes: ns/op is the CPU a search costs when every core is busy,
// as under the HTTP load, where a search's two goroutines cannot run beside each other.
func BenchmarkIndexSearchLoad(b *testing.B) {
	for _, n := range benchSizes(b) {
		cs, x := benchCorpus(b, n)
		words := strings.Fields(strings.ToLower(strings.NewReplacer(".", " ", ",", " ").Replace(cs[0].Description)))
		r := rand.New(rand.NewPCG(1, 2))
		for k := 1; k <= 3; k++ {
			queries := make([]Query, 256)
			for i := range queries {
				q := make([]string, k)
				for j := range q {
					q[j] = words[r.IntN(len(words))]
				}
				queries[i] = Query{Q: strings.Join(q, " "), Page: paging.Page{Limit: new(10)}}
			}
			b.Run(fmt.Sprintf("%dk/q-%d-words", n/1000, k), func(b *testing.B) {
				var next atomic.Int64
				b.SetParallelism(8)
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					// A search writes to its plan: each goroutine has its own.
					plans := make([]Plan, len(queries))
					for i, q := range queries {
						p, err := q.Compile()
						if err != nil {
							b.Error(err)
							return
						}
						plans[i] = p
					}
					for pb.Next() {
						p := &plans[next.Add(1)%int64(len(plans))]
						x.mu.RLock()
						x.Search(p, nil, nil)
						x.mu.RUnlock()
					}
				})
			})
		}
	}
}
