package index

import (
	"cmp"
	"database/sql"
	goflag "flag"
	"fmt"
	"hash/fnv"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/agentcards/agentcards/cards/search/semantic/semantictest"
)

// poolOut is where TestRelevancePool writes the judging pools of bench/relevance/registry.
var poolOut = goflag.String("relevance.pool", "", "write the judging pools of bench/relevance/registry into this directory")

// poolDepth is how many of each system's first answers go into a query's pool.
const poolDepth = 20

// TestRelevancePool writes, for each query of bench/relevance/registry, the pool its judges
// grade: the union of the first poolDepth answers of six systems (the search, the search
// re-ranked by the sentence encoder, BM25 with and without stemming, Postgres's websearch_to_tsquery
// with its words joined by OR, ranked by ts_rank_cd, and every card ranked by the encoder's
// cosine alone, which finds cards that share no word with the query), in an order that does not
// tell which system found a card. It writes one file per query (its cards' agentId, name and
// description) and pool.tsv (query id and agentId of every pooled pair). It is a tool for
// building the set, run by hand with -relevance.pool and AGENTCARDS_TEST_POSTGRES_DSN (see
// bench/relevance/registry/README.md); without the flag it does nothing.
func TestRelevancePool(t *testing.T) {
	if *poolOut == "" {
		t.Skip("a tool: run with -relevance.pool=DIR to write the judging pools")
	}
	j := readUnjudged(t, registryDir)
	m := semantictest.Model(t)
	if m == nil {
		t.Fatal("the pools need the sentence encoder (AGENTCARDS_USE_MODEL)")
	}
	vectors := j.embedded(m)
	systems := []func(judgedQuery) []string{
		j.index(t, nil, poolDepth), j.encoded(t, m, vectors, encoderWeight, encoderDepth), j.bm25(false), j.bm25(true),
		j.postgres(t, os.Getenv("AGENTCARDS_TEST_POSTGRES_DSN")), j.dense(m, vectors),
	}
	byID := map[string]int{}
	for i, c := range j.cards {
		byID[c.AgentID] = i
	}
	if err := os.MkdirAll(*poolOut, 0o755); err != nil {
		t.Fatal(err)
	}
	var pairs strings.Builder
	for _, q := range j.queries {
		pool := map[string]bool{}
		for _, ranked := range systems {
			got := ranked(q)
			for _, id := range got[:min(poolDepth, len(got))] {
				pool[id] = true
			}
		}
		ids := slices.Collect(maps.Keys(pool))
		mixed := func(id string) uint64 {
			h := fnv.New64a()
			h.Write([]byte(q.id + "\x00" + id))
			return h.Sum64()
		}
		slices.SortFunc(ids, func(a, b string) int { return cmp.Compare(mixed(a), mixed(b)) })
		var out strings.Builder
		fmt.Fprintf(&out, "# %s\t%s\n# agentId\tname\tdescription\n", q.id, q.text)
		for _, id := range ids {
			c := j.cards[byID[id]]
			fmt.Fprintf(&out, "%s\t%s\t%s\n", id, c.Name, c.Description)
		}
		if err := os.WriteFile(filepath.Join(*poolOut, q.id+".tsv"), []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, id := range slices.Sorted(slices.Values(ids)) {
			fmt.Fprintf(&pairs, "%s\t%s\n", q.id, id)
		}
		t.Logf("%s %q: %d cards pooled", q.id, q.text, len(ids))
	}
	if err := os.WriteFile(filepath.Join(*poolOut, "pool.tsv"), []byte(pairs.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// postgres ranks the cards for q as Postgres's full-text search does with the words of
// websearch_to_tsquery('english', q) joined by OR, over to_tsvector('english', name and
// description), ordered by ts_rank_cd and then agentId.
func (j judged) postgres(tb testing.TB, dsn string) func(judgedQuery) []string {
	if dsn == "" {
		tb.Fatal("the Postgres ranking needs AGENTCARDS_TEST_POSTGRES_DSN")
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1) // one session: the table is temporary
	if _, err := db.Exec(`CREATE TEMPORARY TABLE pool_cards (agent_id text PRIMARY KEY, doc tsvector)`); err != nil {
		tb.Fatal(err)
	}
	for _, c := range j.cards {
		if _, err := db.Exec(`INSERT INTO pool_cards VALUES ($1, to_tsvector('english', $2))`, c.AgentID, c.Name+" "+c.Description); err != nil {
			tb.Fatal(err)
		}
	}
	return func(q judgedQuery) []string {
		rows, err := db.Query(`SELECT agent_id FROM pool_cards,
			CAST(replace(websearch_to_tsquery('english', $1)::text, ' & ', ' | ') AS tsquery) AS q
			WHERE doc @@ q ORDER BY ts_rank_cd(doc, q) DESC, agent_id`, q.text)
		if err != nil {
			tb.Fatalf("%q: %v", q.text, err)
		}
		defer rows.Close()
		var ids []string
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				tb.Fatal(err)
			}
			ids = append(ids, id)
		}
		if err := rows.Err(); err != nil {
			tb.Fatal(err)
		}
		return ids
	}
}
