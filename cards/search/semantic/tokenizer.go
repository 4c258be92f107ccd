package semantic

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"unicode/utf16"

	"golang.org/x/text/unicode/norm"
)

// separator replaces spaces and starts every normalized text, as in
// SentencePiece.
const separator = '▁'

// reservedPieces is how many pieces at the start of the vocabulary (unknown,
// <s>, </s> and three extra ids) are never matched against text.
const reservedPieces = 6

// unknownID is the id of the unknown piece.
const unknownID = 0

// tokenizer is a port of the tokenizer of @energetic-ai/embeddings 0.2.0
// (itself the one of @tensorflow-models/universal-sentence-encoder): a trie
// of the vocabulary and a best-path search written the way the JS writes
// it, quirks included.
type tokenizer struct {
	// units is, for each piece id, the length of the piece in UTF-16 code
	// units: the JS steps back by that much when it reads the best path.
	units []int
	nodes []trieNode
	edges map[trieEdge]int32
}

// trieNode is one node of the vocabulary trie.
type trieNode struct {
	end   bool
	score float64
	id    int32
}

// trieEdge keys the child of node reached by symbol.
type trieEdge struct {
	node   int32
	symbol rune
}

// tokenBuffers holds the working memory of one encode call.
type tokenBuffers struct {
	symbols []rune
	best    []float64
	words   []int32
	ids     []int
}

// readVocabulary reads vocab.json in dir: a list of [piece, score] pairs
// whose score may be null (which the JS adds as 0).
func readVocabulary(dir string) (*tokenizer, error) {
	path := filepath.Join(dir, "vocab.json")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("semantic: read vocabulary: %w", err)
	}
	var entries [][]any
	if err := json.Unmarshal(data, &entries); err != nil {
		return nil, fmt.Errorf("semantic: parse %s: %w", path, err)
	}
	if len(entries) <= reservedPieces {
		return nil, fmt.Errorf("semantic: %s has only %d pieces", path, len(entries))
	}
	t := &tokenizer{
		units: make([]int, len(entries)),
		nodes: []trieNode{{}},
		edges: map[trieEdge]int32{},
	}
	for id, e := range entries {
		piece, score, err := parsePiece(e)
		if err != nil {
			return nil, fmt.Errorf("semantic: %s entry %d: %w", path, id, err)
		}
		t.units[id] = len(utf16.Encode([]rune(piece)))
		if id >= reservedPieces {
			t.insert(piece, score, int32(id))
		}
	}
	if t.units[unknownID] == 0 {
		return nil, fmt.Errorf("semantic: %s: the unknown piece is empty", path)
	}
	return t, nil
}

// parsePiece reads one [piece, score] entry; a null score reads as 0.
func parsePiece(e []any) (string, float64, error) {
	if len(e) != 2 {
		return "", 0, fmt.Errorf("want [piece, score], got %d values", len(e))
	}
	piece, ok := e[0].(string)
	if !ok {
		return "", 0, fmt.Errorf("piece is %T, not a string", e[0])
	}
	switch score := e[1].(type) {
	case nil:
		return piece, 0, nil
	case float64:
		return piece, score, nil
	default:
		return "", 0, fmt.Errorf("score is %T, not a number", e[1])
	}
}

// insert adds a piece to the trie. As in the JS, a piece seen twice keeps
// the score and id of its last occurrence.
func (t *tokenizer) insert(piece string, score float64, id int32) {
	node := int32(0)
	for _, r := range piece {
		child, ok := t.edges[trieEdge{node, r}]
		if !ok {
			child = int32(len(t.nodes))
			t.nodes = append(t.nodes, trieNode{})
			t.edges[trieEdge{node, r}] = child
		}
		node = child
	}
	if node != 0 {
		t.nodes[node] = trieNode{end: true, score: score, id: id}
	}
}

// encode returns the piece ids of text, held in buf.ids until the next call.
func (t *tokenizer) encode(text string, buf *tokenBuffers) []int {
	buf.symbols = appendSymbols(buf.symbols[:0], text)
	n := len(buf.symbols)
	buf.best = resize(buf.best, n+1)
	buf.words = resize(buf.words, n+1)
	for i := range n {
		t.relaxFrom(i, buf)
	}
	return t.bestPath(buf)
}

// appendSymbols appends the code points the JS tokenizes: the NFKC form of
// text with every space replaced by the separator, which also starts it.
// An empty text has no symbols.
func appendSymbols(dst []rune, text string) []rune {
	normalized := norm.NFKC.String(text)
	if normalized == "" {
		return dst
	}
	dst = append(dst, separator)
	for _, r := range normalized {
		if r == ' ' {
			r = separator
		}
		dst = append(dst, r)
	}
	return dst
}

// relaxFrom offers, for every piece that starts at symbol i, the path that
// ends with that piece, exactly as the JS does: a path wins if the best
// score at its end is still 0 or if it scores at least as well, so later
// candidates win ties. When no piece starts at i, the unknown piece of one
// symbol with score 0 is offered instead.
func (t *tokenizer) relaxFrom(i int, buf *tokenBuffers) {
	matched := false
	node := int32(0)
	for j := i; j < len(buf.symbols); j++ {
		child, ok := t.edges[trieEdge{node, buf.symbols[j]}]
		if !ok {
			break
		}
		node = child
		if n := t.nodes[node]; n.end {
			offer(buf, i, j+1, n.score, n.id)
			matched = true
		}
	}
	if !matched {
		offer(buf, i, i+1, 0, unknownID)
	}
}

// offer relaxes the best path ending at end with a piece spanning start:end.
func offer(buf *tokenBuffers, start, end int, score float64, id int32) {
	s := score + buf.best[start]
	if buf.best[end] == 0 || s >= buf.best[end] {
		buf.best[end] = s
		buf.words[end] = id
	}
}

// bestPath reads the best path back from the end, stepping back by each
// piece's UTF-16 length as the JS does, drops every unknown piece that
// follows another one, and returns the ids in text order.
func (t *tokenizer) bestPath(buf *tokenBuffers) []int {
	ids := buf.ids[:0]
	previousUnknown := false
	for i := len(buf.symbols); i > 0; i -= t.units[buf.words[i]] {
		id := int(buf.words[i])
		if !(previousUnknown && id == unknownID) {
			ids = append(ids, id)
		}
		previousUnknown = id == unknownID
	}
	for l, r := 0, len(ids)-1; l < r; l, r = l+1, r-1 {
		ids[l], ids[r] = ids[r], ids[l]
	}
	buf.ids = ids
	return ids
}

// resize returns s with length n and every element zero, reusing its
// memory when it is large enough.
func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}
