package cards

import "bytes"

// A light pass over JSON text that finds where values end and what an object's members are
// called, without decoding anything: batch registration splits its array with it, and Decode
// recognises with it the documents it may decode in one go. It does not check that the text is
// well formed; its callers have encoding/json check that.

// skipSpace returns the index of the first byte from i on that is not JSON whitespace.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index just after the string whose opening quote is b[i], and whether
// it holds an escape; ok is false if the text ends first.
func stringEnd(b []byte, i int) (end int, escaped, ok bool) {
	i++
	// Most strings hold no escape: find the next quote at memchr's speed, and if no backslash
	// comes before it, that is the closing one.
	if q := bytes.IndexByte(b[i:], '"'); q >= 0 && bytes.IndexByte(b[i:i+q], '\\') < 0 {
		return i + q + 1, false, true
	}
	for ; i < len(b); i++ {
		switch b[i] {
		case '\\':
			escaped = true
			i++
		case '"':
			return i + 1, escaped, true
		}
	}
	return 0, false, false
}

// valueEnd returns the index just after the value that starts at b[i]: after the bracket that
// closes an object or array, the quote that closes a string, the last character of a literal.
// ok is false if there is no value there or the text ends inside it.
func valueEnd(b []byte, i int) (end int, ok bool) {
	end, _, ok = valueDepthEnd(b, i)
	return end, ok
}

// valueDepthEnd is valueEnd that also returns how deeply the value nests objects and arrays (0
// for a string or literal, 1 for {} or [1]).
func valueDepthEnd(b []byte, i int) (end, deepest int, ok bool) {
	start, depth := i, 0
	for i < len(b) {
		switch b[i] {
		case '"':
			end, _, ok := stringEnd(b, i)
			if !ok {
				return 0, deepest, false
			}
			if depth == 0 {
				return end, deepest, true
			}
			i = end
			continue
		case '{', '[':
			if depth++; depth > deepest {
				deepest = depth
			}
		case '}', ']':
			if depth == 0 {
				return i, deepest, i > start // the end of a literal
			}
			if depth--; depth == 0 {
				return i + 1, deepest, true
			}
		case ',', ':', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return i, deepest, i > start
			}
		}
		i++
	}
	return i, deepest, depth == 0 && i > start
}

// plainClientObject reports whether data is one object, with nothing after it, whose members
// are all client fields named exactly (no escapes, no other case, no server field): the common
// document, which decoding straight into a Card reads just as Decode's general way does.
func plainClientObject(data []byte) bool {
	plain, _ := scanClientObject(data)
	return plain
}

// scanClientObject is plainClientObject that also returns, for a plain document, how deeply its
// members' values nest (valueDepthEnd): read in the same pass, it bounds the depth of every
// free-form value in the card at no extra cost.
func scanClientObject(data []byte) (plain bool, deepest int) {
	i := skipSpace(data, 0)
	if i == len(data) || data[i] != '{' {
		return false, 0
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return skipSpace(data, i+1) == len(data), 0
	}
	for {
		if i == len(data) || data[i] != '"' {
			return false, 0
		}
		end, escaped, ok := stringEnd(data, i)
		if !ok || escaped || !clientFields[string(data[i+1:end-1])] {
			return false, 0
		}
		i = skipSpace(data, end)
		if i == len(data) || data[i] != ':' {
			return false, 0
		}
		var depth int
		if end, depth, ok = valueDepthEnd(data, skipSpace(data, i+1)); !ok {
			return false, 0
		}
		deepest = max(deepest, depth)
		i = skipSpace(data, end)
		if i == len(data) {
			return false, 0
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case '}':
			return skipSpace(data, i+1) == len(data), deepest
		default:
			return false, 0
		}
	}
}
