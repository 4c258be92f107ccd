package webtest

import (
	"strings"
	"sync"
)

// LogBuffer is a writer a server under test logs to while the test reads what it wrote; it is
// safe for concurrent use, which a bytes.Buffer is not.
type LogBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

// Write appends p.
func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns everything written so far.
func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
