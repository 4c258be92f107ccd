package index

// SetDense sets the tuning the tests of other paths need: posting lists of at least entries
// entries kept as bitmaps, and scoring split into parts of words bitmap words. It returns what
// puts the tuning back.
func SetDense(entries, words int) (undo func()) {
	dense, split := denseEntries, parallelWords
	denseEntries, parallelWords = entries, words
	return func() { denseEntries, parallelWords = dense, split }
}
