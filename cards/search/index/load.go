package index

import (
	"hash/maphash"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/agentcards/agentcards/cards"
)

// Loader indexes cards in batches, as a build reads them. A batch's cards are analysed on every
// core, each worker taking a contiguous run of them and listing their words and their names'
// trigrams apart; the workers' lists are then appended to the index's by two goroutines, each
// taking half of them, while the first files the batch's other postings. The workers keep their
// lists from one batch to the next, with the index's list each is appended to: a word or
// trigram met again costs no lookup in the index, nor a new list. While a Loader loads, x is
// not shared (a build), or the caller is inside Write for each batch.
type Loader struct {
	x *Tenant
	// compactions is x's count of them when the workers' lists were linked to its lists, which a
	// compaction replaces.
	compactions uint64
	workers     []*loadWorker
}

// NewLoader returns a Loader of cards into x.
func (x *Tenant) NewLoader() *Loader { return &Loader{x: x, compactions: x.compactions} }

// Load indexes many cards, analysing them and building their postings on every core, as one
// batch of a Loader. Cards of agents already indexed (or given twice) replace what was indexed.
// x is not shared yet, or the caller is inside Write.
func (x *Tenant) Load(cs []cards.Card) { x.NewLoader().Load(cs) }

// Load indexes a batch of cards. Cards of agents already indexed (or given twice) replace what
// was indexed, one by one, after the others.
func (ld *Loader) Load(cs []cards.Card) {
	x := ld.x
	fresh := make([]cards.Card, 0, len(cs))
	var again []cards.Card
	seen := make(map[string]bool, len(cs))
	for _, c := range cs {
		if _, indexed := x.byID.get(x.docs, c.AgentID); indexed || seen[c.AgentID] {
			again = append(again, c)
			continue
		}
		seen[c.AgentID] = true
		fresh = append(fresh, c)
	}
	x.room(len(fresh))
	if x.compactions != ld.compactions {
		ld.workers, ld.compactions = nil, x.compactions
	}
	base := len(x.docs)
	x.docs = slices.Grow(x.docs, len(fresh))[:base+len(fresh)]
	x.lens = slices.Grow(x.lens, len(fresh))[:base+len(fresh)]
	workers := max(1, min(runtime.GOMAXPROCS(0), len(fresh)/128))
	for len(ld.workers) < workers {
		ld.workers = append(ld.workers, newLoadWorker(len(x.terms)))
	}
	per := (len(fresh) + workers - 1) / workers
	var wg sync.WaitGroup
	for w, lw := range ld.workers[:workers] {
		first := min(w*per, len(fresh))
		wg.Go(func() { lw.analyse(x, fresh[first:min(first+per, len(fresh))], base+first) })
	}
	wg.Wait()
	ld.merge(ld.workers[:workers], base, len(fresh))
	for _, c := range again {
		x.Upsert(c)
	}
}

// merge appends the workers' lists of the batch to the index's, in the workers' order (the
// documents of each come after those of the one before), and makes the batch's k documents,
// from base, live.
func (ld *Loader) merge(workers []*loadWorker, base, k int) {
	x := ld.x
	// Lists met for the first time are linked to the index's, which are made for words and
	// trigrams new to it (keyed by the worker's copy of the text): by one goroutine, as the
	// index's maps of lists change.
	for _, w := range workers {
		for _, l := range w.touched {
			if l.into != nil {
				continue
			}
			if l.gram {
				l.into = x.gramListOwned(l.term)
			} else {
				l.into = x.listOwned(l.term)
			}
		}
	}
	// Two goroutines append the workers' lists, each those of its half; the other postings and
	// the documents' registration touch none of them meanwhile.
	var wg sync.WaitGroup
	for _, half := range []bool{false, true} {
		wg.Go(func() {
			for _, w := range workers {
				for _, l := range w.touched {
					if l.half == half {
						l.into.add(false, l.tail...)
					}
				}
			}
		})
	}
	for i := range k {
		x.register(uint32(base + i))
	}
	for _, w := range workers {
		// The part holds protocols, tags and capabilities only (see analyse): none of the lists
		// the halves are appending to.
		x.merge(w.part)
	}
	wg.Wait()
	for _, w := range workers {
		w.next()
	}
}

// loadWorker analyses its share of each batch of a Loader.
type loadWorker struct {
	// byTerm holds a list for each term met (a word's stem, or a number); byWord the list of
	// each word met, as it is in the text: most words recur, and are then found in one lookup.
	// Numbers are not in byWord: they recur less (a name's number, a version), and would crowd
	// the words out. byGram holds a list for each trigram of the names.
	byTerm, byWord, byGram map[string]*rawList
	// touched holds the lists given entries in this batch.
	touched []*rawList
	// part holds the batch's other postings: protocols, tags and capabilities.
	part postings
}

// rawList is a worker's entries of a term (or, if gram, a trigram) in a batch, every one in
// tail, with the index's list they are appended to (linked when the batch is merged) and which
// half of the lists it is in.
type rawList struct {
	plist
	term       string
	into       *plist
	half, gram bool
}

// maxWords bounds the words and terms a worker keeps with their lists; tests make it small.
var maxWords = 1 << 16

// loadSeed splits the terms into halves (see Loader.merge).
var loadSeed = maphash.MakeSeed()

func newLoadWorker(terms int) *loadWorker {
	// A share of a batch meets about as many words as the index knows: sized for them, the map
	// is not regrown while it fills.
	return &loadWorker{byTerm: make(map[string]*rawList, min(terms, 1<<14)), byWord: make(map[string]*rawList, 1024),
		byGram: make(map[string]*rawList, 1024)}
}

// analyse indexes cs as the documents from first on: their words' and trigrams' entries in the
// worker's lists, their other postings in its part, and each document's own record in x.
func (w *loadWorker) analyse(x *Tenant, cs []cards.Card, first int) {
	w.part = newPostings()
	for i, c := range cs {
		n := uint32(first + i)
		d := analyzeWith(c, func(tok string, field uint8) {
			l := w.byWord[tok]
			if l == nil {
				l = w.list(tok)
			}
			if len(l.tail) == 0 {
				w.touched = append(w.touched, l)
			}
			l.addCount(true, n, field)
		})
		x.docs[n], x.lens[n] = newIdoc(c, d), d.length
		w.part.postValues(n, d)
		eachTrigram(d.name, func(g string) {
			l := w.gramList(g)
			if len(l.tail) == 0 {
				w.touched = append(w.touched, l)
			}
			l.addOnce(true, n)
		})
	}
}

// list returns the list of the word tok, as the text has it, making it if new. The maps keep
// copies of their keys: a word is a part of a card's text, which they would keep.
func (w *loadWorker) list(tok string) *rawList {
	if number(tok) {
		return w.termList(tok)
	}
	l := w.termList(stem(tok))
	if len(w.byWord) < maxWords {
		w.byWord[strings.Clone(tok)] = l
	}
	return l
}

// termList returns the list of the term t, making it if new.
func (w *loadWorker) termList(t string) *rawList {
	l := w.byTerm[t]
	if l == nil {
		l = w.newList(w.byTerm, t)
	}
	return l
}

// gramList returns the list of the trigram g, making it if new.
func (w *loadWorker) gramList(g string) *rawList {
	l := w.byGram[g]
	if l == nil {
		l = w.newList(w.byGram, g)
		l.gram = true
	}
	return l
}

// newList makes the list of t, new to m.
func (w *loadWorker) newList(m map[string]*rawList, t string) *rawList {
	t = strings.Clone(t)
	l := &rawList{term: t, half: maphash.String(loadSeed, t)&1 == 1}
	m[t] = l
	return l
}

// next empties the worker's lists for the next batch, keeping their room. Past maxWords terms
// (names' words and numbers, which seldom recur) it starts its words again from none, and past
// maxWords trigrams (names in scripts of many letters) its trigrams.
func (w *loadWorker) next() {
	for _, l := range w.touched {
		l.tail = l.tail[:0]
	}
	w.touched = w.touched[:0]
	w.part = postings{}
	if len(w.byTerm) > maxWords || len(w.byWord) >= maxWords {
		fresh := newLoadWorker(len(w.byTerm))
		w.byTerm, w.byWord = fresh.byTerm, fresh.byWord
	}
	if len(w.byGram) > maxWords {
		w.byGram = make(map[string]*rawList, 1024)
	}
}
