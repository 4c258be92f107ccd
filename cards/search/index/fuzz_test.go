package index

import (
	"testing"

	"github.com/agentcards/agentcards/tenants/paging"
)

// FuzzQuery: a query of any text compiles or is refused, never panics; one that compiles
// compiles again to the same fingerprint, and a cursor of its own answers is accepted by it.
func FuzzQuery(f *testing.F) {
	f.Add("invoice forecast summar", "careful image", "code", "https://github.com/acme/*", "")
	f.Add("a_b c-d", "%_*", "Code", "mcp://x", "not a cursor")
	f.Add("", "", "", "", "")
	f.Fuzz(func(t *testing.T, q, name, tag, resource, cursor string) {
		query := Query{Q: q, Name: name, Tags: []string{tag}, Resources: []string{resource}, Page: paging.Page{Cursor: cursor}}
		p, err := query.Compile()
		if err != nil {
			return
		}
		again, err := query.Compile()
		if err != nil || again.fingerprint != p.fingerprint {
			t.Fatalf("the same query compiled twice: %v, fingerprints %x and %x", err, p.fingerprint, again.fingerprint)
		}
		query.Cursor = encodePosition(Position{AgentID: "rev", Query: p.fingerprint})
		if _, err := query.Compile(); err != nil {
			t.Fatalf("a cursor of the query's own is refused: %v", err)
		}
	})
}
