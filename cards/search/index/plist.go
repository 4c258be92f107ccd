package index

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
)

// plist is a word's posting list: entries doc<<termShift | weighted count, ascending by
// document. All but its newest entries are packed in blocks of packSize (see packed), which
// take about a byte an entry where a list's documents lie close together (a common word's)
// instead of four; the newest stay as they are in tail, at least one of them once the list
// holds any, so that adding to the last document's count and appending cost what they cost in
// a slice. A list being filled by a build's worker (see Loader) keeps every
// entry in tail.
type plist struct {
	tail []uint32
	p    *packed
}

// packSize is how many entries a packed block holds.
const packSize = 128

// packed holds a list's full blocks. A block's first entry is in its head, whole; its bytes
// start with its format, then the rest of its entries one after another, each as the gap to
// the document before it (less one) and its count:
//
//	packNibbles: a byte each, gap<<4 | count, when every gap is below 16 and every count too
//	packBytes:   two bytes each, gap and count, when every gap is below 256
//	packVarints: the gap as an unsigned varint, then the count's byte
type packed struct {
	heads []blockHead
	data  []byte
}

type blockHead struct {
	first uint32 // the block's first entry
	off   uint32 // where its bytes start in data
}

const (
	packNibbles byte = iota
	packBytes
	packVarints
)

// blocks is the number of packed blocks.
func (l *plist) blocks() int {
	if l.p == nil {
		return 0
	}
	return len(l.p.heads)
}

// Len is the number of entries.
func (l *plist) Len() int { return l.blocks()*packSize + len(l.tail) }

// add appends entries, which come after every entry the list holds, and packs full blocks
// unless raw.
func (l *plist) add(raw bool, entries ...uint32) {
	l.tail = append(l.tail, entries...)
	if raw || len(l.tail) <= packSize {
		return
	}
	// Pack every full block but keep an entry back, so that the tail is never empty.
	k := (len(l.tail) - 1) / packSize * packSize
	for i := 0; i < k; i += packSize {
		l.pack(l.tail[i : i+packSize])
	}
	rest := copy(l.tail, l.tail[k:])
	l.tail = l.tail[:rest]
	if cap(l.tail) > 2*packSize {
		l.tail = slices.Clip(slices.Clone(l.tail))
	}
}

// addCount records an occurrence of weight in document n, which is the list's last or after it,
// adding it to n's count.
func (l *plist) addCount(raw bool, n uint32, weight uint8) {
	if len(l.tail) > 0 {
		if last := &l.tail[len(l.tail)-1]; *last>>termShift == n {
			*last = n<<termShift | uint32(min(int(*last&countMask)+int(weight), maxCount))
			return
		}
	}
	l.add(raw, n<<termShift|uint32(weight))
}

// addOnce adds document n, with no count (a trigram's list), unless it is the list's last; n is
// the list's last or after it. The last entry is always in the tail (see add), so a name that
// holds a trigram twice is listed once, without sorting its trigrams.
func (l *plist) addOnce(raw bool, n uint32) {
	if k := len(l.tail); k > 0 && l.tail[k-1] == n<<termShift {
		return
	}
	l.add(raw, n<<termShift)
}

// pack appends the block b (packSize entries) to the packed blocks.
func (l *plist) pack(b []uint32) {
	if l.p == nil {
		l.p = &packed{}
	}
	p := l.p
	p.heads = append(p.heads, blockHead{first: b[0], off: uint32(len(p.data))})
	format := packNibbles
	for i := 1; i < len(b); i++ {
		gap := b[i]>>termShift - b[i-1]>>termShift - 1
		count := b[i] & countMask
		switch {
		case gap >= 256:
			format = packVarints
		case (gap >= 16 || count >= 16) && format == packNibbles:
			format = packBytes
		}
	}
	p.data = append(p.data, format)
	for i := 1; i < len(b); i++ {
		gap := b[i]>>termShift - b[i-1]>>termShift - 1
		count := byte(b[i] & countMask)
		switch format {
		case packNibbles:
			p.data = append(p.data, byte(gap)<<4|count)
		case packBytes:
			p.data = append(p.data, byte(gap), count)
		default:
			p.data = binary.AppendUvarint(p.data, uint64(gap))
			p.data = append(p.data, count)
		}
	}
}

// block decodes packed block i into buf.
func (p *packed) block(i int, buf *[packSize]uint32) []uint32 {
	h := p.heads[i]
	b := p.data[h.off:]
	buf[0] = h.first
	doc := h.first >> termShift
	switch b[0] {
	case packNibbles:
		b = b[1:packSize]
		for j, v := range b {
			doc += uint32(v>>4) + 1
			buf[j+1] = doc<<termShift | uint32(v&15)
		}
	case packBytes:
		b = b[1 : 1+2*(packSize-1)]
		for j := 1; j < packSize; j++ {
			doc += uint32(b[0]) + 1
			buf[j] = doc<<termShift | uint32(b[1])
			b = b[2:]
		}
	default:
		b = b[1:]
		for j := 1; j < packSize; j++ {
			gap, k := binary.Uvarint(b)
			doc += uint32(gap) + 1
			buf[j] = doc<<termShift | uint32(b[k])
			b = b[k+1:]
		}
	}
	return buf[:]
}

// each calls f with the entries in order, a block at a time.
func (l *plist) each(f func([]uint32)) {
	var buf [packSize]uint32
	for i := range l.blocks() {
		f(l.p.block(i, &buf))
	}
	f(l.tail)
}

// appendTo appends every entry to out.
func (l *plist) appendTo(out []uint32) []uint32 {
	var buf [packSize]uint32
	for i := range l.blocks() {
		out = append(out, l.p.block(i, &buf)...)
	}
	return append(out, l.tail...)
}

// newPlist packs the entries of a list.
func newPlist(entries []uint32) *plist {
	l := &plist{}
	l.fill(entries)
	return l
}

// fill makes the empty l hold entries, packed.
func (l *plist) fill(entries []uint32) {
	if len(entries) <= packSize {
		l.tail = slices.Clone(entries)
		return
	}
	k := (len(entries) - 1) / packSize * packSize
	l.p = &packed{heads: make([]blockHead, 0, k/packSize), data: make([]byte, 0, k+k/packSize)}
	for i := 0; i < k; i += packSize {
		l.pack(entries[i : i+packSize])
	}
	l.p.data = slices.Clip(l.p.data)
	l.tail = slices.Clone(entries[k:])
}

// bytes is the memory the list holds, beside its own header.
func (l *plist) bytes() int64 {
	n := int64(cap(l.tail)) * 4
	if l.p != nil {
		n += 48 + int64(cap(l.p.heads))*8 + int64(cap(l.p.data))
	}
	return n
}

// countOf finds document n in the list: its weighted count of the word.
func (l *plist) countOf(n uint32) (uint8, bool) {
	v := n<<termShift | countMask // n's entry is at most v
	entries := l.tail
	if len(entries) == 0 || entries[0] > v {
		// Blocks before the tail: the last whose first entry is at most v.
		i := sort.Search(l.blocks(), func(i int) bool { return l.p.heads[i].first > v }) - 1
		if i < 0 {
			return 0, false
		}
		var buf [packSize]uint32
		entries = l.p.block(i, &buf)
		return countIn(entries, n)
	}
	return countIn(entries, n)
}

// docs returns the documents of the list, in order.
func (l *plist) docs() []uint32 {
	out := l.appendTo(make([]uint32, 0, l.Len()))
	for i := range out {
		out[i] >>= termShift
	}
	return out
}

// intersect returns the documents of docs (ascending) the list holds: by reading the whole list
// beside docs when docs are many against it, else by skipping to each.
func (l *plist) intersect(docs []uint32) []uint32 {
	out := make([]uint32, 0, len(docs))
	if len(docs)*16 >= l.Len() {
		i := 0
		l.each(func(entries []uint32) {
			for _, e := range entries {
				d := e >> termShift
				for i < len(docs) && docs[i] < d {
					i++
				}
				if i == len(docs) {
					return
				}
				if docs[i] == d {
					out = append(out, d)
					i++
				}
			}
		})
		return out
	}
	var rd reader
	rd.seek(l, 0)
	for _, n := range docs {
		if e, ok := rd.skipTo(n << termShift); !ok {
			break
		} else if e>>termShift == n {
			out = append(out, n)
		}
	}
	return out
}

// reader reads a list in order, a block at a time.
type reader struct {
	l    *plist
	next int      // the next block to read; blocks() is the tail
	cur  []uint32 // entries read and not yet taken
	buf  [packSize]uint32
}

// seek starts r at the first entry of l at or after v.
func (r *reader) seek(l *plist, v uint32) {
	r.l = l
	r.from(0, v)
}

// skipTo moves r on to the first entry at or after v, which is not before where r is, and
// returns it; false when there is none.
func (r *reader) skipTo(v uint32) (uint32, bool) {
	if c := r.cur; len(c) == 0 || c[len(c)-1] < v {
		r.from(r.next, v)
	} else if c[0] < v {
		i, _ := slices.BinarySearch(c, v)
		r.cur = c[i:]
	}
	if len(r.cur) == 0 {
		return 0, false
	}
	return r.cur[0], true
}

// from moves r to the first entry at or after v, looking from block first on.
func (r *reader) from(first int, v uint32) {
	l := r.l
	r.cur = nil
	nb := l.blocks()
	if first > nb {
		r.next = first
		return
	}
	if len(l.tail) > 0 && l.tail[0] <= v || nb == first {
		r.next = nb
	} else {
		// The block holding v, if any: the last whose first entry is at most v.
		r.next = first + max(0, sort.Search(nb-first, func(i int) bool { return l.p.heads[first+i].first > v })-1)
	}
	if !r.load() {
		return
	}
	i, _ := slices.BinarySearch(r.cur, v)
	r.cur = r.cur[i:]
	if len(r.cur) == 0 {
		r.load()
	}
}

// load reads the next block (or the tail) into cur; false when none is left.
func (r *reader) load() bool {
	nb := r.l.blocks()
	switch {
	case r.next < nb:
		r.cur = r.l.p.block(r.next, &r.buf)
	case r.next == nb:
		r.cur = r.l.tail
	default:
		r.cur = nil
		return false
	}
	r.next++
	return true
}

// take returns the next entries below end, at most a block of them, and moves past them; none
// when the next entry is at or after end, or none is left.
func (r *reader) take(end uint32) []uint32 {
	if len(r.cur) == 0 && !r.load() {
		return nil
	}
	c := r.cur
	if len(c) == 0 || c[0] >= end {
		return nil
	}
	k := len(c)
	if c[k-1] >= end {
		k, _ = slices.BinarySearch(c, end)
	}
	r.cur = c[k:]
	return c[:k]
}

// scatter takes the entries below end, as take does, raising counts[n-blo] to the count of each
// entry of document n, and returns the greatest count taken. A block wholly below end is read
// straight into counts, without its entries being written out. end is at most maxBlockDocs
// documents past blo.
func (r *reader) scatter(end uint32, blo int, counts *blockCounts) uint8 {
	var most uint8
	for {
		if c := r.cur; len(c) > 0 {
			k := len(c)
			if c[k-1] >= end {
				k, _ = slices.BinarySearch(c, end)
			}
			for _, e := range c[:k] {
				j, v := (int(e>>termShift)-blo)&(maxBlockDocs-1), uint8(e&countMask)
				counts[j] = max(counts[j], v)
				most = max(most, v)
			}
			if r.cur = c[k:]; len(r.cur) > 0 {
				return most
			}
		}
		l := r.l
		nb := l.blocks()
		if r.next < nb && (r.next+1 < nb && l.p.heads[r.next+1].first <= end || r.next+1 == nb && l.tail[0] <= end) {
			most = max(most, l.p.scatter(r.next, blo, counts))
			r.next++
			continue
		}
		if !r.load() {
			return most
		}
	}
}

// scatter is reader.scatter for the whole of block i. A document's place in counts is masked,
// which spares the check of its bounds; it is below maxBlockDocs anyway.
func (p *packed) scatter(i, blo int, counts *blockCounts) uint8 {
	const mask = maxBlockDocs - 1
	h := p.heads[i]
	b := p.data[h.off:]
	doc := int(h.first>>termShift) - blo
	most := uint8(h.first & countMask)
	counts[doc&mask] = max(counts[doc&mask], most)
	switch b[0] {
	case packNibbles:
		for _, v := range b[1:packSize] {
			doc += int(v>>4) + 1
			c := v & 15
			counts[doc&mask] = max(counts[doc&mask], c)
			most = max(most, c)
		}
	case packBytes:
		b = b[1 : 1+2*(packSize-1)]
		for j := 0; j+1 < len(b); j += 2 {
			doc += int(b[j]) + 1
			c := b[j+1]
			counts[doc&mask] = max(counts[doc&mask], c)
			most = max(most, c)
		}
	default:
		b = b[1:]
		for range packSize - 1 {
			gap, k := binary.Uvarint(b)
			doc += int(gap) + 1
			c := b[k]
			counts[doc&mask] = max(counts[doc&mask], c)
			most = max(most, c)
			b = b[k+1:]
		}
	}
	return most
}

// check reports a list whose parts are out of shape: an empty tail after blocks, or one that
// should have been packed.
func (l *plist) check() error {
	if l.blocks() > 0 && (len(l.tail) == 0 || len(l.tail) > packSize) {
		return fmt.Errorf("a packed list with %d entries unpacked", len(l.tail))
	}
	return nil
}
