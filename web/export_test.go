package web

import (
	"maps"
	"slices"
)

// For the external tests: the query parameters the card search reads, and where agents post
// results.
var (
	WebSearchParams = func() []string { return slices.Sorted(maps.Keys(searchParams)) }
	WebCallbackPath = callbackPath
	MCPPath         = mcpPath
)
