package index

import (
	"sync"
	"unsafe"
)

// A filter most cards pass (a common protocol or tag) has a long list; intersecting two such
// lists costs their length, while their bitmaps (a bit a document) intersect a word of 64
// documents at a time and count by popcount. Such lists' bitmaps are made at their first search
// and kept while the index does not change (its gen).

// dense reports whether the filters' lists are all long enough to be read as bitmaps: the
// shortest has a document in 32 or more (its bitmap then takes no more memory than it).
func (x *Tenant) dense(lists [][]uint32) bool {
	if len(lists) == 0 {
		return false
	}
	for _, l := range lists {
		if len(l)*32 < len(x.docs) {
			return false
		}
	}
	return true
}

// filterBits sets s.bits to the live documents in every list (all dense).
func (x *Tenant) filterBits(lists [][]uint32, s *scratch) {
	copy(s.bits, x.alive)
	for _, l := range lists {
		b := x.bitmapOf(l)
		for w := range s.bits {
			s.bits[w] &= b[w]
		}
	}
}

// bitmaps keeps the bitmaps of dense filter lists for one gen of the index, by list.
type bitmaps struct {
	mu  sync.Mutex
	gen uint64
	m   map[*uint32][]uint64
}

// maxBitmaps bounds the bitmaps kept at once: 16 take 2 MiB at a million documents.
const maxBitmaps = 16

// bitmapOf returns the bitmap of the documents of list (one of the index's posting lists, not
// empty). The caller holds the read lock.
func (x *Tenant) bitmapOf(list []uint32) []uint64 {
	c, key := &x.bitmaps, unsafe.SliceData(list)
	c.mu.Lock()
	if c.m == nil || c.gen != x.gen {
		c.m, c.gen = map[*uint32][]uint64{}, x.gen
	}
	b, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return b
	}
	b = make([]uint64, len(x.alive))
	for _, n := range list {
		b[n>>6] |= 1 << (n & 63)
	}
	c.mu.Lock()
	if c.gen == x.gen && len(c.m) < maxBitmaps {
		c.m[key] = b
	}
	c.mu.Unlock()
	return b
}

// bytes is the memory the kept bitmaps take.
func (c *bitmaps) bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := int64(0)
	for _, b := range c.m {
		n += int64(len(b)) * 8
	}
	return n
}
