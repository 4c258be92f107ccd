package index

import (
	"bufio"
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash/crc32"
	"io"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/agentcards/agentcards/cards"
)

// A snapshot is a tenant index written out whole: its documents and posting lists, so that a
// restart reads them back instead of reading, decoding and analysing every card again. It is
// only ever a head start: the index restored from it is compared, card by card, with the
// versions the database holds (see cards/search), and what differs is read again.
//
// The layout, every number an unsigned varint unless said otherwise:
//
//	snapshotMagic
//	format, stamp, tenant (strings as in the header: length and bytes)
//	the string section: its length, then the bytes of every string below, one after another
//	documents: count, then each: agentId, name, cardId, revision and updatedAt (signed
//	  varints), flags (alive, public, verified, trusted), status, length, resources: count, then each: scheme,
//	  host, segments (count, then each), wildcard (0 or 1)
//	order: count, then the document numbers
//	the entries of every posting list below, in all
//	protocols, tags, caps: each a count of keys, then each key and its list (count, then each
//	  entry less the one before, modulo 2^32)
//	trigrams, terms: each a count of keys, then each key and its list as it is held (see
//	  plist): the count of its packed blocks, each block's first entry (less the block
//	  before's) and its length in bytes, the blocks' bytes, then its tail as a list above
//	a CRC-32C of everything before it (4 bytes, little endian)
//
// After the header a string is its length only: its bytes come next in the string section,
// which a reader turns into one string and slices, so reading a snapshot back allocates little
// for strings; packed blocks are copied as they are, once checked (see checkBlock). vocab3 is
// not written: it is the terms' keys by prefix.
const (
	snapshotMagic  = "agentcards search index\n"
	snapshotFormat = 5
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errSnapshot is a snapshot that cannot be read back: cut short, corrupt, or of another format.
var errSnapshot = errors.New("not a readable index snapshot")

// snapshotEncoder writes a snapshot's parts to w, in three passes over the index, each making
// the same calls in the same order: the first counts the string section's bytes and the lists'
// entries (which the header and the documents' part give first), the second writes the
// strings, the third the rest. So a snapshot is written out as it is encoded, and never held
// in memory whole.
type snapshotEncoder struct {
	w    *bufio.Writer
	pass int
	// strs and entries are counted by the first pass.
	strs, entries int
}

// The passes of a snapshotEncoder.
const (
	countPass = iota
	stringsPass
	restPass
)

func (e *snapshotEncoder) uint(v uint64) {
	if e.pass == restPass {
		_, _ = e.w.Write(binary.AppendUvarint(e.w.AvailableBuffer(), v))
	}
}

func (e *snapshotEncoder) int(v int64) {
	if e.pass == restPass {
		_, _ = e.w.Write(binary.AppendVarint(e.w.AvailableBuffer(), v))
	}
}

func (e *snapshotEncoder) count(n int) { e.uint(uint64(n)) }

func (e *snapshotEncoder) str(s string) {
	switch e.pass {
	case countPass:
		e.strs += len(s)
	case stringsPass:
		_, _ = e.w.WriteString(s)
	default:
		e.count(len(s))
	}
}

// ref writes a card's id as str would, without making its string.
func (e *snapshotEncoder) ref(r cardRef) {
	switch e.pass {
	case countPass:
		e.strs += r.length()
	case stringsPass:
		_, _ = e.w.Write(r.appendTo(e.w.AvailableBuffer()))
	default:
		e.count(r.length())
	}
}

// packed writes a packed list as it is held (see the layout).
func (e *snapshotEncoder) packed(l *plist) {
	if e.pass == countPass {
		e.entries += l.Len()
	}
	if e.pass != restPass {
		return
	}
	e.count(l.blocks())
	if l.p != nil {
		prev := uint32(0)
		for i, h := range l.p.heads {
			end := uint32(len(l.p.data))
			if i+1 < len(l.p.heads) {
				end = l.p.heads[i+1].off
			}
			e.uint(uint64(h.first - prev))
			e.uint(uint64(end - h.off))
			prev = h.first
		}
		_, _ = e.w.Write(l.p.data)
	}
	e.list(l.tail)
}

func (e *snapshotEncoder) list(l []uint32) {
	if e.pass == countPass {
		e.entries += len(l)
	}
	if e.pass != restPass {
		return
	}
	e.count(len(l))
	prev := uint32(0)
	for _, v := range l {
		e.uint(uint64(v - prev))
		prev = v
	}
}

// encodeSnapshot returns the snapshot writeSnapshot writes.
func encodeSnapshot(x *Tenant, tenant, stamp string, sorted bool) []byte {
	var b bytes.Buffer
	if err := writeSnapshot(&b, x, tenant, stamp, sorted); err != nil {
		panic(err) // a bytes.Buffer takes every write
	}
	return b.Bytes()
}

// writeSnapshot writes x out to w as the snapshot of tenant; sorted writes the maps in key
// order (for analyzerStamp, which must not depend on map order). The caller holds x.mu (read).
func writeSnapshot(w io.Writer, x *Tenant, tenant, stamp string, sorted bool) error {
	keys := snapshotKeys{
		lists:  [3][]keyed[[]uint32]{entriesOf(x.protocols, sorted), entriesOf(x.tags, sorted), entriesOf(x.caps, sorted)},
		packed: [2][]keyed[*plist]{entriesOf(x.trigrams, sorted), entriesOf(x.terms, sorted)},
	}
	sum := crc32.New(castagnoli)
	e := &snapshotEncoder{w: bufio.NewWriterSize(io.MultiWriter(w, sum), 1<<16)}
	e.index(x, keys)
	_, _ = e.w.WriteString(snapshotMagic)
	e.pass = restPass // the header's numbers are written
	e.uint(snapshotFormat)
	for _, s := range []string{stamp, tenant} {
		e.count(len(s))
		_, _ = e.w.WriteString(s)
	}
	e.count(e.strs)
	for _, pass := range []int{stringsPass, restPass} {
		e.pass = pass
		e.index(x, keys)
		// A failed write (a full disk) stops the encoding here.
		if err := e.w.Flush(); err != nil {
			return err
		}
	}
	_, err := w.Write(binary.LittleEndian.AppendUint32(nil, sum.Sum32()))
	return err
}

// snapshotKeys are the entries of the index's maps, in the order every pass writes them.
type snapshotKeys struct {
	lists  [3][]keyed[[]uint32] // protocols, tags, caps
	packed [2][]keyed[*plist]   // trigrams, terms
}

// keyed is a map's entry.
type keyed[V any] struct {
	key   string
	value V
}

// entriesOf returns m's entries, sorted by key if asked (else in map order, which costs nothing
// to find).
func entriesOf[V any](m map[string]V, sorted bool) []keyed[V] {
	out := make([]keyed[V], 0, len(m))
	for k, v := range m {
		out = append(out, keyed[V]{k, v})
	}
	if sorted {
		slices.SortFunc(out, func(a, b keyed[V]) int { return strings.Compare(a.key, b.key) })
	}
	return out
}

// index makes one pass over x (see snapshotEncoder): every part of the snapshot after the
// string section's length.
func (e *snapshotEncoder) index(x *Tenant, keys snapshotKeys) {
	e.count(len(x.docs))
	for i := range x.docs {
		d := &x.docs[i]
		e.str(d.agentID)
		e.str(d.name)
		e.ref(d.cardID)
		e.int(d.revision)
		e.int(d.updated)
		e.uint(flag(d.alive, 1) | flag(d.public, 2) | flag(d.verified, 4) | flag(d.trusted, 8))
		e.str(string(statusName(d.status)))
		e.uint(uint64(x.lens[i]))
		e.count(len(d.patterns()))
		for _, r := range d.patterns() {
			e.str(r.scheme)
			e.str(r.host)
			e.count(len(r.segments))
			for _, s := range r.segments {
				e.str(s)
			}
			e.uint(flag(r.wildcard, 1))
		}
	}
	e.count(len(x.order))
	for _, n := range x.order {
		e.uint(uint64(n))
	}
	e.count(e.entries)
	for _, m := range keys.lists {
		e.count(len(m))
		for _, kv := range m {
			e.str(kv.key)
			e.list(kv.value)
		}
	}
	for _, m := range keys.packed {
		e.count(len(m))
		for _, kv := range m {
			e.str(kv.key)
			e.packed(kv.value)
		}
	}
}

func flag(b bool, bit uint64) uint64 {
	if b {
		return bit
	}
	return 0
}

// snapshotDecoder reads a snapshot's parts from b, and its strings from strs; the first
// failure sticks (err), and every read after it gives zeros.
type snapshotDecoder struct {
	b    []byte
	strs string
	// entries is how many posting list entries are left to read.
	entries int
	err     error
}

func (d *snapshotDecoder) uint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errSnapshot
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *snapshotDecoder) int() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = errSnapshot
		return 0
	}
	d.b = d.b[n:]
	return v
}

// count reads a count of items that take at least a byte each, so a corrupt count cannot ask
// for more memory than the snapshot's size.
func (d *snapshotDecoder) count() int { return d.countOf(1) }

// countOf is count for items of at least size bytes each.
func (d *snapshotDecoder) countOf(size int) int {
	n := d.uint()
	if n > uint64(len(d.b)/size) {
		d.err = errSnapshot
		return 0
	}
	return int(n)
}

// raw reads a string in the header, whose bytes follow its length.
func (d *snapshotDecoder) raw() string {
	n := d.count()
	if d.err != nil {
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

// str reads a string's length and takes its bytes from the string section.
func (d *snapshotDecoder) str() string {
	n := d.uint()
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.strs)) {
		d.err = errSnapshot
		return ""
	}
	s := d.strs[:n]
	d.strs = d.strs[n:]
	return s
}

// list reads a posting list whose entries, shifted right by shift, name documents below docs
// in ascending order, each once, into buf if it has room, else into a new array.
func (d *snapshotDecoder) list(docs int, shift uint, buf []uint32) []uint32 {
	n := d.count()
	if d.err != nil {
		return nil
	}
	if n > d.entries {
		d.err = errSnapshot
		return nil
	}
	d.entries -= n
	l := buf[:0]
	if cap(l) < n {
		l = make([]uint32, n)
	}
	l = l[:n]
	b, prev := d.b, uint64(0)
	for i := range l {
		// Most entries are a byte: read those without the general decoder.
		var v uint64
		if len(b) > 0 && b[0] < 0x80 {
			v, b = uint64(b[0]), b[1:]
		} else {
			x, k := binary.Uvarint(b)
			if k <= 0 || x > math.MaxUint32 {
				d.err = errSnapshot
				return nil
			}
			v, b = x, b[k:]
		}
		next := prev + v
		// Each entry names a later document than the one before (a word's entry carries its
		// count in the low bits), and no document past the last.
		if (i > 0 && next>>shift <= prev>>shift) || next>>shift >= uint64(docs) {
			d.err = errSnapshot
			return nil
		}
		l[i], prev = uint32(next), next
	}
	d.b = b
	return l
}

// packed reads a packed list into the empty l, checking every block as list checks a list, with
// buf to read its tail into; it returns buf, perhaps grown.
func (d *snapshotDecoder) packed(docs int, l *plist, buf []uint32) []uint32 {
	nb := d.countOf(3) // a block takes two counts and a byte at least
	last := int64(-1)  // the last document of the blocks
	if nb > 0 && d.err == nil {
		if nb*packSize > d.entries {
			d.err = errSnapshot
			return buf
		}
		d.entries -= nb * packSize
		heads := make([]blockHead, nb)
		prev, off := uint64(0), uint64(0)
		for i := range heads {
			delta, size := d.uint(), d.uint()
			first := prev + delta
			// Each part is bounded before it is added, so that no sum wraps around.
			if delta > math.MaxUint32 || size > math.MaxUint32 || first > math.MaxUint32 || off+size > math.MaxUint32 {
				d.err = errSnapshot
				return buf
			}
			heads[i] = blockHead{first: uint32(first), off: uint32(off)}
			prev, off = first, off+size
		}
		if d.err != nil || off > uint64(len(d.b)) {
			d.err = errSnapshot
			return buf
		}
		l.p = &packed{heads: heads, data: slices.Clone(d.b[:off])}
		d.b = d.b[off:]
		for i, h := range heads {
			end := uint32(len(l.p.data))
			if i+1 < nb {
				end = heads[i+1].off
			}
			var ok bool
			if last, ok = checkBlock(l.p.data[h.off:end], h.first, last, docs); !ok {
				d.err = errSnapshot
				return buf
			}
		}
	}
	buf = d.list(docs, termShift, buf)
	switch {
	case d.err != nil:
	case nb == 0:
		l.fill(buf)
	case len(buf) == 0 || len(buf) > packSize || int64(buf[0]>>termShift) <= last:
		d.err = errSnapshot
	default:
		l.tail = slices.Clone(buf)
	}
	return buf
}

// checkBlock checks a packed block whose first entry is first: its format and length, and that
// its documents come after prev and before docs. It returns its last document.
func checkBlock(b []byte, first uint32, prev int64, docs int) (int64, bool) {
	doc := int64(first >> termShift)
	if doc <= prev || len(b) == 0 {
		return 0, false
	}
	switch b[0] {
	case packNibbles:
		if len(b) != packSize {
			return 0, false
		}
		for _, v := range b[1:] {
			doc += int64(v>>4) + 1
		}
	case packBytes:
		if len(b) != 1+2*(packSize-1) {
			return 0, false
		}
		for j := 1; j < len(b); j += 2 {
			doc += int64(b[j]) + 1
		}
	case packVarints:
		p := b[1:]
		for range packSize - 1 {
			gap, k := binary.Uvarint(p)
			if k <= 0 || len(p) < k+1 || gap > math.MaxUint32 {
				return 0, false
			}
			doc += int64(gap) + 1
			p = p[k+1:]
		}
		if len(p) != 0 {
			return 0, false
		}
	default:
		return 0, false
	}
	return doc, doc < int64(docs)
}

// doc reads one document into doc and its length.
func (d *snapshotDecoder) doc(doc *idoc, length *uint32) error {
	doc.agentID, doc.name, doc.cardID = d.str(), d.str(), refOf(d.str())
	doc.revision, doc.updated = d.int(), d.int()
	flags := d.uint()
	doc.alive, doc.public, doc.verified, doc.trusted = flags&1 != 0, flags&2 != 0, flags&4 != 0, flags&8 != 0
	doc.status = statusBit(cards.Status(d.str()))
	l := d.uint()
	if l > math.MaxUint32 {
		return errSnapshot
	}
	*length = uint32(l)
	if k := d.count(); k > 0 {
		patterns := make([]resourcePattern, k)
		doc.resources = &patterns
		for j := range patterns {
			r := &patterns[j]
			r.scheme, r.host = d.str(), d.str()
			r.segments = make([]string, d.count())
			for s := range r.segments {
				r.segments[s] = d.str()
			}
			r.wildcard = d.uint() == 1
		}
	}
	return d.err
}

// decodeSnapshot reads back a snapshot of tenant written with stamp; any other (or a damaged
// one) is errSnapshot.
func decodeSnapshot(b []byte, tenant, stamp string) (*Tenant, error) {
	if len(b) < len(snapshotMagic)+4 || string(b[:len(snapshotMagic)]) != snapshotMagic {
		return nil, errSnapshot
	}
	body, sum := b[:len(b)-4], binary.LittleEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return nil, errSnapshot
	}
	d := &snapshotDecoder{b: body[len(snapshotMagic):]}
	if d.uint() != snapshotFormat || d.raw() != stamp || d.raw() != tenant {
		return nil, errSnapshot
	}
	// One string for all the strings: each one read is a part of it.
	d.strs = d.raw()
	if d.err != nil {
		return nil, errSnapshot
	}
	n := d.countOf(8) // a document takes 8 bytes at least
	if n > maxDocs {
		return nil, errSnapshot
	}
	x := NewFor(n)
	x.docs = x.docs[:n]
	x.lens = x.lens[:n]
	for i := range x.docs {
		if err := d.doc(&x.docs[i], &x.lens[i]); err != nil {
			return nil, err
		}
	}
	x.alive = make([]uint64, (n+63)/64)
	for i := range x.docs {
		if doc := &x.docs[i]; doc.alive {
			setBit(x.alive, uint32(i))
			x.byID.put(x.docs, uint32(i))
			x.live++
			x.length += uint64(x.lens[i])
			x.floorLength(x.lens[i])
			if doc.status == bitDisabled {
				x.disabled++
			}
		}
	}
	x.order = x.order[:0]
	for range d.count() {
		v := d.uint()
		if v >= uint64(n) || !x.docs[v].alive {
			return nil, errSnapshot
		}
		if k := len(x.order); k > 0 && x.docs[x.order[k-1]].agentID >= x.docs[v].agentID {
			return nil, errSnapshot // out of agent id order
		}
		x.order = append(x.order, uint32(v))
	}
	if len(x.order) != x.live || x.byID.Len() != x.live {
		return nil, errSnapshot // an agent twice, or a live document out of the order
	}
	d.entries = d.count()
	for _, m := range []map[string][]uint32{x.protocols, x.tags, x.caps} {
		keys := d.countOf(2) // a key takes its length and its list's count
		for range keys {
			k := d.str()
			m[k] = d.list(n, 0, nil)
		}
		if len(m) != keys {
			return nil, errSnapshot // a key twice
		}
	}
	var buf []uint32
	keys := d.countOf(2)
	for range keys {
		k := d.str()
		l := &plist{}
		buf = d.packed(n, l, buf)
		x.trigrams[k] = l
	}
	if len(x.trigrams) != keys {
		return nil, errSnapshot
	}
	keys = d.countOf(2)
	x.terms = make(map[string]*plist, keys)
	lists := make([]plist, keys) // the terms' list headers, one allocation for them all
	for i := range keys {
		k := d.str()
		buf = d.packed(n, &lists[i], buf)
		x.terms[k] = &lists[i]
		if len(k) >= minPrefix {
			x.vocab3[k[:minPrefix]] = append(x.vocab3[k[:minPrefix]], k)
		}
	}
	if d.err != nil || len(x.terms) != keys || len(d.b) != 0 || len(d.strs) != 0 || d.entries != 0 {
		return nil, errSnapshot
	}
	return x, nil
}

// analyzerStamp names what a snapshot depends on besides the cards: the snapshot format and
// the analysis of cards into documents and postings. It is the digest of the snapshot of an
// index of a few fixed cards, so a change to tokenizing, trigrams, resource parsing or the
// encoding (anything these cards exercise) makes every older snapshot unreadable, and indexes
// are built from the cards again.
var analyzerStamp = sync.OnceValue(func() string {
	x := New()
	x.Load(stampCards())
	sum := sha256.Sum256(encodeSnapshot(x, "", analysisVersion, true))
	return hex.EncodeToString(sum[:12])
})

// analysisVersion goes into analyzerStamp: move it on with any change to what the index
// derives from a card that the stamp's cards might not show (and with any change to how
// stored cards decode), so that snapshots written before are not read back.
const analysisVersion = "3"

// stampCards are the fixed cards of analyzerStamp: every field search reads, ASCII and other
// scripts, punctuation, case, resources with and without wildcards.
func stampCards() []cards.Card {
	cs := []cards.Card{
		{AgentID: "agt_reviewer", ID: "c1", Revision: 3, Name: "Code Reviewer", Description: "Reviews pull-requests; flags risky changes (Go, TypeScript) & summarises them.",
			Protocols: []string{"A2A", "http"}, Tags: []string{"Code", "review"}, Status: cards.StatusActive, Visibility: cards.VisibilityPublic,
			Capabilities: []cards.Capability{{Name: "review_pr", Title: "Review a PR", Description: "Reads a diff, answers comments.", Tags: []string{"Pull-Requests"}}},
			Resources:    []cards.Resource{{URI: "https://git.example:443/org/*"}, {URI: "HTTP://Docs.Example:8080/a/../b//c%2Fd"}}},
		{AgentID: "agt_übersetzer", ID: "c2", Revision: 1, Name: "Übersetzer Straße", Description: "Übersetzt Dokumente ins Deutsche — schnell, genau. 翻訳エージェント",
			Protocols: []string{"mcp"}, Tags: []string{"Sprache", "i18n"}, Status: cards.StatusDisabled, Visibility: cards.VisibilityTenant,
			Capabilities: []cards.Capability{{Name: "translate", Description: "DE↔EN, fr-FR; Ünïcödé."}}},
		{AgentID: "agt_x", ID: "c3", Revision: 7, Name: "x", Description: "", Status: cards.StatusDeprecated, Visibility: cards.VisibilityPrivate},
		{AgentID: "agt_signed", ID: "c4", Revision: 2, Name: "Signed Importer", Description: "Imported, its signature verified.",
			Protocols: []string{"a2a"}, Visibility: cards.VisibilityPublic,
			Capabilities: []cards.Capability{{Name: "fetch_docs", Tags: []string{"Docs", "HTTP-fetch"}, Examples: []string{"fetch the README"}}},
			A2A:          &cards.A2A{Import: &cards.ImportRecord{Format: "1.0", Signature: cards.SignatureCheck{Status: cards.SignatureVerified}}}},
	}
	return slices.SortedFunc(slices.Values(cs), func(a, b cards.Card) int { return cmp.Compare(a.AgentID, b.AgentID) })
}

// EncodeTo writes x out to w as the snapshot of tenant, for Decode, as it is encoded: the
// snapshot of a large index is not held in memory. It returns the first error of w. The caller
// holds the read lock (RLockLong: encoding a large index takes a while).
func (x *Tenant) EncodeTo(w io.Writer, tenant string) error {
	return writeSnapshot(w, x, tenant, analyzerStamp(), false)
}

// Decode reads back a snapshot of tenant that EncodeTo wrote with the same analysis of cards; any
// other, or a damaged one, is an error.
func Decode(b []byte, tenant string) (*Tenant, error) {
	return decodeSnapshot(b, tenant, analyzerStamp())
}
