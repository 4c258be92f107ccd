// Package index is the in-memory search index of one tenant's cards and the ranking of its
// answers: the tokenizer and the analysis of a card into a document, posting lists, the query
// and its plan, matching, ranking and paging, and the snapshot format an index is written out
// in. It knows nothing of where cards come from: cards/search builds an index per tenant, keeps
// it current from the change feed, writes it out and reads it back, and answers searches with it.
//
// A Tenant is safe for concurrent searches under its read lock; writes take its write lock
// through Install, Write or TryWrite, one at a time.
package index
