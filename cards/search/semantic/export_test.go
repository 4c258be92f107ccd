package semantic

// MaxLen is how many tokens of a text m reads, for the external tests.
func MaxLen(m *Model) int { return m.maxLen }
