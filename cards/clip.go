package cards

import "unicode/utf8"

// Clip cuts s to at most n bytes, never inside a character: what a record keeps of an error
// text or a message that has a column's bound (probes' and webhook deliveries' errors).
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
