package main

import (
	"strings"
	"unicode/utf8"
)

// nearest is the candidate a mistyped word most likely meant: one equal to it but for case,
// else the closest within a third of its length in edits (editDistance; at least one), the
// first listed on a tie; "" when none is that close.
func nearest(word string, candidates []string) string {
	for _, c := range candidates {
		if strings.EqualFold(c, word) {
			return c
		}
	}
	best, bestDist := "", max(1, utf8.RuneCountInString(word)/3)+1
	for _, c := range candidates {
		if d := editDistance(strings.ToLower(word), strings.ToLower(c)); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// didYouMean is the suffix of an error about word: the candidate it may have meant, or "".
func didYouMean(word string, candidates []string) string {
	if near := nearest(word, candidates); near != "" {
		return " (did you mean " + near + "?)"
	}
	return ""
}
