package index

import "hash/maphash"

// idTable finds a document by its agent's id: an open-addressed hash table (linear probing) of
// document numbers, whose keys are their documents' agentIds. A million ids take 8 MiB or less
// so, against about 40 MiB in a map from the ids; a lookup reads the document's id to compare.
// The documents are passed to every call that needs their ids.
type idTable struct {
	slots []uint32 // a document's number plus one; 0 is an empty slot
	n     int
	seed  maphash.Seed
}

func newIDTable(n int) idTable {
	size := 8
	for size*3 < n*4 { // at most three quarters full
		size *= 2
	}
	return idTable{slots: make([]uint32, size), seed: maphash.MakeSeed()}
}

// Len is the number of ids.
func (t *idTable) Len() int { return t.n }

func (t *idTable) home(id string) int {
	return int(maphash.String(t.seed, id) & uint64(len(t.slots)-1))
}

// find returns the slot of id, or of the empty slot where it would go.
func (t *idTable) find(docs []idoc, id string) int {
	mask := len(t.slots) - 1
	for i := t.home(id); ; i = (i + 1) & mask {
		s := t.slots[i]
		if s == 0 || docs[s-1].agentID == id {
			return i
		}
	}
}

// get returns the document of id.
func (t *idTable) get(docs []idoc, id string) (uint32, bool) {
	if len(t.slots) == 0 {
		return 0, false
	}
	s := t.slots[t.find(docs, id)]
	return s - 1, s != 0
}

// put makes document n, in docs, the one of its agentId.
func (t *idTable) put(docs []idoc, n uint32) {
	if (t.n+1)*4 > len(t.slots)*3 {
		t.grow(docs)
	}
	i := t.find(docs, docs[n].agentID)
	if t.slots[i] == 0 {
		t.n++
	}
	t.slots[i] = n + 1
}

// grow doubles the table.
func (t *idTable) grow(docs []idoc) {
	old := t.slots
	t.slots = make([]uint32, max(8, 2*len(old)))
	for _, s := range old {
		if s != 0 {
			t.slots[t.find(docs, docs[s-1].agentID)] = s
		}
	}
}

// remove drops id, moving back the ids after it in its run that could sit in its slot (so that
// no lookup meets a gap before its id).
func (t *idTable) remove(docs []idoc, id string) {
	if len(t.slots) == 0 {
		return
	}
	i := t.find(docs, id)
	if t.slots[i] == 0 {
		return
	}
	t.n--
	mask := len(t.slots) - 1
	for j := (i + 1) & mask; t.slots[j] != 0; j = (j + 1) & mask {
		k := t.home(docs[t.slots[j]-1].agentID)
		// The id at j may move to the gap at i unless its home lies cyclically in (i, j].
		if (j > i && (k <= i || k > j)) || (j < i && k <= i && k > j) {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = 0
}

// renumber gives each document listed its new number, renum[n]; the documents keep their ids.
func (t *idTable) renumber(renum []uint32) {
	for i, s := range t.slots {
		if s != 0 {
			t.slots[i] = renum[s-1] + 1
		}
	}
}

// all yields every id's document number, in no particular order.
func (t *idTable) all(yield func(uint32) bool) {
	for _, s := range t.slots {
		if s != 0 && !yield(s-1) {
			return
		}
	}
}

// bytes is the table's memory.
func (t *idTable) bytes() int64 { return int64(len(t.slots)) * 4 }
