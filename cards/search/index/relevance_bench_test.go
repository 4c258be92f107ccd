package index

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/search/semantic"
	"github.com/agentcards/agentcards/cards/search/semantic/semantictest"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/tenants/paging"
)

// judged is a relevance set: cards, queries, and the grade of each card for each query (2: does
// what the query asks, 1: related; absent: 0).
type judged struct {
	cards   []cards.Card
	queries []judgedQuery
}

type judgedQuery struct {
	id, text string
	grades   map[string]int // by agentId
}

// relevanceDir holds the judged set of bench/relevance; registryDir, the one of
// bench/relevance/registry.
var (
	relevanceDir = filepath.Join("..", "..", "..", "bench", "relevance")
	registryDir  = filepath.Join(relevanceDir, "registry")
)

// readJudged reads the judged set of bench/relevance (see its README.md).
func readJudged(tb testing.TB) judged { return readJudgedDir(tb, relevanceDir) }

// readUnjudged reads the cards and queries of the set in dir: cards.jsonl and queries.tsv.
func readUnjudged(tb testing.TB, dir string) judged {
	tb.Helper()
	var j judged
	f, err := os.Open(filepath.Join(dir, "cards.jsonl"))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var c struct {
			AgentID, Name, Description string
			Tags                       []string
		}
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			tb.Fatal(err)
		}
		j.cards = append(j.cards, cards.Card{AgentID: c.AgentID, Name: c.Name, Description: c.Description, Tags: c.Tags,
			ID: "id-" + c.AgentID, Revision: 1, Status: cards.StatusActive})
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	for _, row := range readTSV(tb, filepath.Join(dir, "queries.tsv"), 2) {
		j.queries = append(j.queries, judgedQuery{id: row[0], text: row[1], grades: map[string]int{}})
	}
	return j
}

// readJudgedDir reads the judged set in dir: readUnjudged's, and qrels.tsv.
func readJudgedDir(tb testing.TB, dir string) judged {
	tb.Helper()
	j := readUnjudged(tb, dir)
	byID := map[string]*judgedQuery{}
	for i := range j.queries {
		byID[j.queries[i].id] = &j.queries[i]
	}
	for _, row := range readTSV(tb, filepath.Join(dir, "qrels.tsv"), 3) {
		q, ok := byID[row[0]]
		g, err := strconv.Atoi(row[2])
		if !ok || err != nil {
			tb.Fatalf("%s: qrels: %q", dir, row)
		}
		q.grades[row[1]] = g
	}
	return j
}

// readTSV reads the lines of the file at path that are neither empty nor comments, split at
// tabs into the given number of fields.
func readTSV(tb testing.TB, path string, fields int) [][]string {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	var out [][]string
	for line := range strings.Lines(string(b)) {
		line = strings.TrimRight(line, "\r\n")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		row := strings.Split(line, "\t")
		if len(row) != fields {
			tb.Fatalf("%s: %q has %d fields, want %d", path, line, len(row), fields)
		}
		out = append(out, row)
	}
	return out
}

// slug is the form of the judged cards' agentIds.
var slug = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// quality is the mean over the queries of nDCG@10, P@1 (the first answer has grade 2: an
// orchestrator that delegates to it is right) and recall@10 of the grade-2 cards.
type quality struct{ ndcg, p1, recall float64 }

func (j judged) quality(ranked func(q judgedQuery) []string) quality {
	var sum quality
	for _, q := range j.queries {
		got := ranked(q)
		if len(got) > 10 {
			got = got[:10]
		}
		var ideal []int
		exact := 0
		for _, g := range q.grades {
			ideal = append(ideal, g)
			if g == 2 {
				exact++
			}
		}
		slices.SortFunc(ideal, func(a, b int) int { return b - a })
		dcg := func(grades []int) float64 {
			s := 0.0
			for i, g := range grades[:min(10, len(grades))] {
				s += (math.Pow(2, float64(g)) - 1) / math.Log2(float64(i+2))
			}
			return s
		}
		var grades []int
		found := 0
		for _, id := range got {
			grades = append(grades, q.grades[id])
			if q.grades[id] == 2 {
				found++
			}
		}
		if best := dcg(ideal); best > 0 {
			sum.ndcg += dcg(grades) / best
		}
		if len(got) > 0 && q.grades[got[0]] == 2 {
			sum.p1++
		}
		if exact > 0 {
			sum.recall += float64(found) / float64(exact)
		}
	}
	n := float64(len(j.queries))
	return quality{sum.ndcg / n, sum.p1 / n, sum.recall / n}
}

// bm25 ranks the judged cards for q by plain BM25 (k1 1.2, b 0.75) over the words of their
// name, description and tags, lowercased, without fields: the baselines. With stemmed, the words
// of both sides are stemmed as the search stems them and the query's stopwords are dropped, as
// the search drops them; without, words are compared as they are.
func (j judged) bm25(stemmed bool) func(q judgedQuery) []string {
	const k1, b = 1.2, 0.75
	words := func(s string, query bool) []string {
		var out []string
		for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !isWordRune(r) }) {
			switch {
			case !stemmed:
				out = append(out, w)
			case !query || !stopword(w):
				out = append(out, stem(w))
			}
		}
		return out
	}
	tf := make([]map[string]int, len(j.cards))
	df := map[string]int{}
	total := 0
	lengths := make([]int, len(j.cards))
	for i, c := range j.cards {
		tf[i] = map[string]int{}
		for _, w := range words(c.Name+" "+c.Description+" "+strings.Join(c.Tags, " "), false) {
			tf[i][w]++
			lengths[i]++
		}
		for w := range tf[i] {
			df[w]++
		}
		total += lengths[i]
	}
	avg := float64(total) / float64(len(j.cards))
	return func(q judgedQuery) []string {
		type scored struct {
			id    string
			score float64
		}
		var out []scored
		terms := slices.Compact(slices.Sorted(slices.Values(words(q.text, true))))
		for i, c := range j.cards {
			s := 0.0
			for _, t := range terms {
				if f := float64(tf[i][t]); f > 0 {
					idf := math.Log(1 + (float64(len(j.cards))-float64(df[t])+0.5)/(float64(df[t])+0.5))
					s += idf * f * (k1 + 1) / (f + k1*(1-b+b*float64(lengths[i])/avg))
				}
			}
			if s > 0 {
				out = append(out, scored{c.AgentID, s})
			}
		}
		slices.SortStableFunc(out, func(a, b scored) int {
			if a.score != b.score {
				return -cmpFloat(a.score, b.score)
			}
			return strings.Compare(a.id, b.id)
		})
		ids := make([]string, len(out))
		for i, s := range out {
			ids[i] = s.id
		}
		return ids
	}
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// index ranks the judged cards for q as a search with q and limit does, with the tenant's
// synonym sets.
func (j judged) index(tb testing.TB, synonyms []tenants.SynonymSet, limit int) func(q judgedQuery) []string {
	x := New()
	x.Load(j.cards)
	return func(q judgedQuery) []string {
		p, err := Query{Q: q.text, Page: paging.Page{Limit: new(limit)}, Synonyms: synonyms}.Compile()
		if err != nil {
			tb.Fatalf("%q: %v", q.text, err)
		}
		page, _, _ := x.Search(&p, nil, nil)
		ids := make([]string, len(page))
		for i, c := range page {
			ids[i] = c.agentID
		}
		return ids
	}
}

// encoded ranks the judged cards for q as index does, then orders the first depth of them again
// by their score over the first one's plus weight times the cosine of the sentence encoder's
// embeddings of the query and the card (vectors: j.embedded's).
func (j judged) encoded(tb testing.TB, m *semantic.Model, vectors map[string]semantic.Packed, weight float64, depth int) func(q judgedQuery) []string {
	x := New()
	x.Load(j.cards)
	return func(q judgedQuery) []string {
		p, err := Query{Q: q.text, Page: paging.Page{Limit: new(depth)}}.Compile()
		if err != nil {
			tb.Fatalf("%q: %v", q.text, err)
		}
		page, _, _ := x.Search(&p, nil, nil)
		if len(page) == 0 {
			return nil
		}
		query := m.Embed(strings.ToLower(q.text))
		scores := make(map[string]float64, len(page))
		ids := make([]string, len(page))
		for i, c := range page {
			ids[i] = c.agentID
			scores[c.agentID] = c.score/page[0].score + weight*vectors[c.agentID].Cosine(query)
		}
		slices.SortStableFunc(ids, func(a, b string) int { return -cmpFloat(scores[a], scores[b]) })
		return ids
	}
}

// dense ranks every card by the cosine of the sentence encoder's embeddings of q and the card
// (vectors: j.embedded's) alone, whether or not it shares a word with q.
func (j judged) dense(m *semantic.Model, vectors map[string]semantic.Packed) func(q judgedQuery) []string {
	return func(q judgedQuery) []string {
		query := m.Embed(strings.ToLower(q.text))
		ids := make([]string, len(j.cards))
		scores := make(map[string]float64, len(j.cards))
		for i, c := range j.cards {
			ids[i] = c.AgentID
			scores[c.AgentID] = vectors[c.AgentID].Cosine(query)
		}
		slices.SortStableFunc(ids, func(a, b string) int { return -cmpFloat(scores[a], scores[b]) })
		return ids
	}
}

// embedded is the sentence encoder's embedding of each card (its name, description and tags,
// lowercased), packed as package search keeps them, by agentId.
func (j judged) embedded(m *semantic.Model) map[string]semantic.Packed {
	vectors := make(map[string]semantic.Packed, len(j.cards))
	for _, c := range j.cards {
		vectors[c.AgentID] = semantic.Pack(m.Embed(strings.ToLower(c.Name + ". " + c.Description + " " + strings.Join(c.Tags, " "))))
	}
	return vectors
}

// readSynonyms reads bench/relevance/synonyms.tsv: a set per line, its id and then its words.
func readSynonyms(tb testing.TB) []tenants.SynonymSet {
	b, err := os.ReadFile(filepath.Join(relevanceDir, "synonyms.tsv"))
	if err != nil {
		tb.Fatal(err)
	}
	var sets []tenants.SynonymSet
	for line := range strings.Lines(string(b)) {
		line = strings.TrimRight(line, "\r\n")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		row := strings.Split(line, "\t")
		set := tenants.SynonymSet{ID: row[0], Words: row[1:]}
		if err := set.Validate(); err != nil {
			tb.Fatalf("synonyms.tsv: %q: %v", line, err)
		}
		sets = append(sets, set)
	}
	return sets
}

// The re-ranking by the sentence encoder (encoded) orders the first encoderDepth matches again,
// the encoder's cosine weighing encoderWeight against the score over the first one's: the
// weight the queries q01–q40 ranked best (of 0.5, 1, 2 and 4, with and without tags).
const (
	encoderWeight = 2
	encoderDepth  = 20
)

// BenchmarkRelevance reports the quality of the search's ranking on the judged sets of
// bench/relevance, without and with the synonym sets of its synonyms.tsv, and that of two BM25
// baselines of the same text computed in the same run: plain, and with the search's stemming and
// stopwords; with the sentence encoder of package semantic installed, also the search re-ranked
// by it (encoded) and every card ranked by the encoder alone (dense). It ranks the cards of
// bench/relevance as judged, then the same cards without their tags (name and description only,
// as a registry whose records carry no categories holds them), then the registry set of
// bench/relevance/registry, judged whole and over its first judges' pools alone (registry-pools:
// how a set judged by pooling measures). Each reports nDCG@10, P@1 and recall@10 of the grade-2 cards, each
// the mean over the queries; the time per op is of no interest.
func BenchmarkRelevance(b *testing.B) {
	set, synonyms, m := readJudged(b), readSynonyms(b), semantictest.Model(b)
	registry := readJudgedDir(b, registryDir)
	views := []struct {
		name    string
		j       judged
		vectors map[string]semantic.Packed // the cards' embeddings, worked out once for the set
	}{{"cards", set, nil}, {"name+description", set.withoutTags(), nil}, {"registry", registry, nil},
		{"registry-pools", registry.overPools(readPool(b, registryDir)), nil}}
	if m != nil {
		for i := range views[:3] {
			views[i].vectors = views[i].j.embedded(m)
		}
		views[3].vectors = views[2].vectors // the same cards
	}
	for _, view := range views {
		j := view.j
		type system struct {
			name   string
			ranked func(judgedQuery) []string
		}
		systems := []system{
			{"search", j.index(b, nil, 10)},
			{"search+synonyms", j.index(b, synonyms, 10)},
			{"bm25", j.bm25(false)},
			{"bm25+stemming", j.bm25(true)},
		}
		if m != nil {
			systems = append(systems,
				system{"search+encoder", j.encoded(b, m, view.vectors, encoderWeight, encoderDepth)},
				system{"encoder-only", j.dense(m, view.vectors)})
		}
		for _, sys := range systems {
			b.Run(view.name+"/"+sys.name, func(b *testing.B) {
				var q quality
				for range b.N {
					q = j.quality(sys.ranked)
				}
				b.ReportMetric(q.ndcg, "nDCG@10")
				b.ReportMetric(q.p1, "P@1")
				b.ReportMetric(q.recall, "recall@10")
			})
		}
	}
}

// readPool reads the pool.tsv of the set in dir: the cards of each query's pool (by query id,
// then agentId), the pairs its first judges graded.
func readPool(tb testing.TB, dir string) map[string]map[string]bool {
	tb.Helper()
	pool := map[string]map[string]bool{}
	for _, row := range readTSV(tb, filepath.Join(dir, "pool.tsv"), 2) {
		if pool[row[0]] == nil {
			pool[row[0]] = map[string]bool{}
		}
		pool[row[0]][row[1]] = true
	}
	return pool
}

// overPools is j judged over pool alone, as a set judged by pooling is: each query's grades of
// the cards in its pool, and only the queries with a grade-2 card there.
func (j judged) overPools(pool map[string]map[string]bool) judged {
	out := judged{cards: j.cards}
	for _, q := range j.queries {
		kept := judgedQuery{id: q.id, text: q.text, grades: map[string]int{}}
		exact := false
		for id, g := range q.grades {
			if pool[q.id][id] {
				kept.grades[id] = g
				exact = exact || g == 2
			}
		}
		if exact {
			out.queries = append(out.queries, kept)
		}
	}
	return out
}

// withoutTags is j with its cards' tags left out.
func (j judged) withoutTags() judged {
	out := judged{queries: j.queries, cards: slices.Clone(j.cards)}
	for i := range out.cards {
		out.cards[i].Tags = nil
	}
	return out
}

// TestJudgedSetWhole: the judged sets of bench/relevance and bench/relevance/registry read, and
// hold together: at least 300 cards and 30 queries, unique slugs for agentIds, queries of 1 to 8
// words, every judged card among the cards, grades 1 or 2, a grade-2 card for every query, a
// pool (where the set has one) of its queries and cards, and synonym sets that are valid.
func TestJudgedSetWhole(t *testing.T) {
	readSynonyms(t)
	for _, dir := range []string{relevanceDir, registryDir} {
		j := readJudgedDir(t, dir)
		ids := map[string]bool{}
		for _, c := range j.cards {
			if ids[c.AgentID] || !slug.MatchString(c.AgentID) {
				t.Errorf("%s: agentId %q twice, or not a slug", dir, c.AgentID)
			}
			ids[c.AgentID] = true
		}
		if len(j.cards) < 300 || len(j.queries) < 30 {
			t.Fatalf("%s: %d cards and %d queries, want at least 300 and 30", dir, len(j.cards), len(j.queries))
		}
		if _, err := os.Stat(filepath.Join(dir, "pool.tsv")); err == nil {
			queries := map[string]bool{}
			for _, q := range j.queries {
				queries[q.id] = true
			}
			for query, pooled := range readPool(t, dir) {
				for id := range pooled {
					if !queries[query] || !ids[id] {
						t.Errorf("%s: pool.tsv pairs %q with %q: not a query and a card", dir, query, id)
					}
				}
			}
		}
		for _, q := range j.queries {
			if n := len(strings.Fields(q.text)); n < 1 || n > 8 {
				t.Errorf("%s %q: %d words", q.id, q.text, n)
			}
			exact := 0
			for id, g := range q.grades {
				if !ids[id] || g < 1 || g > 2 {
					t.Errorf("%s: %q graded %d", q.id, id, g)
				}
				if g == 2 {
					exact++
				}
			}
			if exact == 0 {
				t.Errorf("%s %q: no card of grade 2", q.id, q.text)
			}
		}
	}
}

// TestRankingQualityHolds: the search's ranking of the judged sets is no worse than it was when
// these floors were set (the figures of bench/README.md, rounded down): a change that lowers one
// fails here, and lowering a floor is a decision its commit explains. The ranking is
// deterministic, so the floors need no margin.
func TestRankingQualityHolds(t *testing.T) {
	set := readJudged(t)
	for _, c := range []struct {
		name      string
		j         judged
		ndcg, top float64
	}{
		{"bench/relevance, cards as judged", set, 0.677, 0.736},
		{"bench/relevance, name and description", set.withoutTags(), 0.666, 0.684},
		{"bench/relevance/registry", readJudgedDir(t, registryDir), 0.535, 0.625},
	} {
		q := c.j.quality(c.j.index(t, nil, 10))
		if q.ndcg < c.ndcg || q.p1 < c.top {
			t.Errorf("%s: nDCG@10 %.4f, P@1 %.4f; the floors are %.3f and %.3f", c.name, q.ndcg, q.p1, c.ndcg, c.top)
		}
	}
}
