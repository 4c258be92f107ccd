package cards

import (
	"runtime"
	"slices"
	"strings"
	"sync"
)

// tenantIndex is the in-memory search index of one tenant's cards: postings from protocols,
// capabilities, tags, text tokens and name trigrams to document numbers. Numbers only grow: a
// changed card is removed and added again, so posting lists stay sorted by appending, and removed
// documents are skipped until a compaction renumbers everything.
type tenantIndex struct {
	mu    sync.RWMutex
	docs  []idoc
	live  int
	alive []uint64 // bitmap of the live documents
	byID  map[string]uint32
	order []uint32 // live documents sorted by agentId: the answer order without q

	protocols, tags, caps map[string][]uint32
	trigrams              map[string][]uint32
	// terms holds doc<<2 | best field for each token; by pointer, so adding to a list costs one
	// map lookup.
	terms map[string]*[]uint32
	// vocab3 lists the tokens that start with each 3-byte prefix, for the prefix match.
	vocab3 map[string][]string
}

type idoc struct {
	agentID   string
	name      string
	resources []resourcePattern
	alive     bool
	// The version indexed: the card's id and revision, to tell a cached rendering current.
	cardID   string
	revision int64
	public   bool
}

func newTenantIndex() *tenantIndex {
	return &tenantIndex{
		byID: map[string]uint32{}, protocols: map[string][]uint32{}, tags: map[string][]uint32{},
		caps: map[string][]uint32{}, trigrams: map[string][]uint32{}, terms: map[string]*[]uint32{},
		vocab3: map[string][]string{},
	}
}

// upsert indexes c, replacing what was indexed for its agent. The caller holds mu.
func (x *tenantIndex) upsert(c Card) {
	x.remove(c.AgentID)
	x.add(c, analyze(c))
}

// load indexes many cards of agents not indexed yet, analysing them on every core; it is how an
// index is built.
func (x *tenantIndex) load(cs []Card) {
	docs := make([]doc, len(cs))
	workers := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(cs); i += workers {
				docs[i] = analyze(cs[i])
			}
		}()
	}
	wg.Wait()
	for i, c := range cs {
		if _, dup := x.byID[c.AgentID]; dup {
			x.upsert(c)
			continue
		}
		x.add(c, docs[i])
	}
}

// add indexes the analysed card d as a new document. The caller holds mu.
func (x *tenantIndex) add(c Card, d doc) {
	n := uint32(len(x.docs))
	x.docs = append(x.docs, idoc{agentID: d.agentID, name: d.name, resources: d.resources, alive: true,
		cardID: c.ID, revision: c.Revision, public: c.Visibility == VisibilityPublic})
	x.live++
	if int(n>>6) >= len(x.alive) {
		x.alive = append(x.alive, 0)
	}
	setBit(x.alive, n)
	x.byID[d.agentID] = n
	// Loads come in agentId order, so this is nearly always an append.
	i, _ := slices.BinarySearchFunc(x.order, d.agentID, x.cmpAgent)
	x.order = slices.Insert(x.order, i, n)
	for _, p := range d.protocols {
		x.protocols[p] = append(x.protocols[p], n)
	}
	for _, t := range d.tags {
		x.tags[t] = append(x.tags[t], n)
	}
	for _, cp := range d.capabilities {
		x.caps[cp] = append(x.caps[cp], n)
	}
	for _, g := range trigramsOf(d.name) {
		x.trigrams[g] = append(x.trigrams[g], n)
	}
	for tok, f := range d.terms {
		list := x.terms[tok]
		if list == nil {
			list = new([]uint32)
			x.terms[tok] = list
			if len(tok) >= minPrefix {
				x.vocab3[tok[:minPrefix]] = append(x.vocab3[tok[:minPrefix]], tok)
			}
		}
		*list = append(*list, n<<2|uint32(f))
	}
}

func (x *tenantIndex) cmpAgent(n uint32, agentID string) int {
	return strings.Compare(x.docs[n].agentID, agentID)
}

// remove drops the agent's card from the index, if indexed. The caller holds mu.
func (x *tenantIndex) remove(agentID string) {
	n, ok := x.byID[agentID]
	if !ok {
		return
	}
	delete(x.byID, agentID)
	x.docs[n].alive = false
	x.docs[n].resources = nil
	x.alive[n>>6] &^= 1 << (n & 63)
	x.live--
	if i, found := slices.BinarySearchFunc(x.order, agentID, x.cmpAgent); found {
		x.order = slices.Delete(x.order, i, i+1)
	}
	if dead := len(x.docs) - x.live; dead > 1024 && dead > x.live {
		x.compact()
	}
}

// compact renumbers the live documents densely and rewrites every posting list without the
// removed ones, so memory and scan cost follow the live cards, not the history of writes.
func (x *tenantIndex) compact() {
	renum := make([]uint32, len(x.docs))
	docs := make([]idoc, 0, x.live)
	for i, d := range x.docs {
		if d.alive {
			renum[i] = uint32(len(docs))
			docs = append(docs, d)
		}
	}
	alive := func(old uint32) bool { return x.docs[old].alive }
	rewriteList := func(list []uint32, shift uint) []uint32 {
		out := list[:0]
		for _, e := range list {
			old := e >> shift
			if alive(old) {
				out = append(out, renum[old]<<shift|e&(1<<shift-1))
			}
		}
		return slices.Clip(out)
	}
	rewrite := func(m map[string][]uint32) {
		for k, list := range m {
			if out := rewriteList(list, 0); len(out) == 0 {
				delete(m, k)
			} else {
				m[k] = out
			}
		}
	}
	rewrite(x.protocols)
	rewrite(x.tags)
	rewrite(x.caps)
	rewrite(x.trigrams)
	for k, list := range x.terms {
		if *list = rewriteList(*list, 2); len(*list) == 0 {
			delete(x.terms, k)
		}
	}
	for p, toks := range x.vocab3 {
		out := toks[:0]
		for _, t := range toks {
			if _, ok := x.terms[t]; ok {
				out = append(out, t)
			}
		}
		if len(out) == 0 {
			delete(x.vocab3, p)
		} else {
			x.vocab3[p] = out
		}
	}
	for i, n := range x.order {
		x.order[i] = renum[n]
	}
	for id, n := range x.byID {
		x.byID[id] = renum[n]
	}
	x.docs = docs
	x.alive = make([]uint64, (len(docs)+63)/64)
	for n := range docs {
		setBit(x.alive, uint32(n))
	}
}

// trigramsOf returns the distinct 3-byte windows of s (lowercased already).
func trigramsOf(s string) []string {
	if len(s) < 3 {
		return nil
	}
	out := make([]string, 0, len(s)-2)
	for i := 0; i+3 <= len(s); i++ {
		out = append(out, s[i:i+3])
	}
	return sortedSet(out)
}

// intersect returns the values in both sorted lists, a being the shorter. It gallops through b
// (exponential then binary search), so a short list against a long one costs |a|·log|b|.
func intersect(a, b []uint32) []uint32 {
	out := make([]uint32, 0, len(a))
	j := 0
	for _, v := range a {
		// Find the first index >= j with b[idx] >= v.
		step := 1
		hi := j
		for hi < len(b) && b[hi] < v {
			j = hi + 1
			hi += step
			step *= 2
		}
		hi = min(hi+1, len(b)) // b[hi] >= v, if it exists: the answer is in b[j:hi+1]
		k, found := slices.BinarySearch(b[j:hi], v)
		j += k
		if j >= len(b) {
			break
		}
		if found {
			out = append(out, v)
			j++
		}
	}
	return out
}
