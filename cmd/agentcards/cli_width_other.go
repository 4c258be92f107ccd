//go:build !unix

package main

import "io"

// terminalWidth is the width in columns of the terminal w is, or 0: unknown on this system,
// where COLUMNS says it.
func terminalWidth(io.Writer) int { return 0 }
