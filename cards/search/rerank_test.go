package search

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/search/searchtest"
	"github.com/agentcards/agentcards/cards/search/semantic/semantictest"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/tenants/paging"
)

// judgedService serves the cards of bench/relevance (570 real agent and tool descriptions), with
// the index or without, re-ranking by the encoder with weight when rerank.
func judgedService(t testing.TB, withIndex, rerank bool, weight float64) *Service {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "bench", "relevance", "cards.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	store := &feedModel{cards: map[string]cards.Card{}}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var j struct {
			AgentID, Name, Description string
			Tags                       []string
		}
		if err := json.Unmarshal(sc.Bytes(), &j); err != nil {
			t.Fatal(err)
		}
		store.cards[j.AgentID] = cards.Card{AgentID: j.AgentID, Name: j.Name, Description: j.Description, Tags: j.Tags,
			ID: "id-" + j.AgentID, Revision: 1, Status: cards.StatusActive}
	}
	s := &Service{Store: store, Gate: admitAll{}, Authz: hiding(nil)}
	if withIndex {
		s.Index = NewIndex(store, store)
	}
	if rerank {
		m := semantictest.Model(t)
		if m == nil {
			t.Skip("the sentence encoder is not installed: " + semantictest.Install)
		}
		if s.Rerank, err = NewReranker(m, weight, 20, 1000); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// rerankQueries are free-text queries over the judged cards, of one to eight words.
var rerankQueries = []string{"kubernetes cluster management", "translate documents", "send slack message",
	"find an agent that can summarize pdf documents", "weather", "database schema migrations postgres",
	"someone keeps trying to log into my server", "email"}

// all follows the cursors of q's pages of limit to the end, and returns every hit in order and
// the total of each page.
func all(t *testing.T, s *Service, q Query, limit int) ([]Hit, []int) {
	t.Helper()
	q.Limit = &limit
	var hits []Hit
	var totals []int
	for {
		res, err := s.Search(caller, "t", q)
		if err != nil {
			t.Fatalf("%q page %d: %v", q.Q, len(totals), err)
		}
		hits = append(hits, res.Items...)
		totals = append(totals, res.Total)
		if res.NextCursor == "" {
			return hits, totals
		}
		q.Cursor = res.NextCursor
	}
}

func agentIDs(hits []Hit) []string {
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.Card.AgentID
	}
	return ids
}

// TestRerankOrdersTheFirstMatchesByRank: with and without the index, the first 20 matches of a q
// search are the plain search's first 20, in the order of their ranks (score over the first's
// plus the weight times the cosine of the query's and the card's embeddings, as the encoder gives
// them), and each explanation says its cosine, weight and rank; with weight 0 the order is the
// plain search's.
func TestRerankOrdersTheFirstMatchesByRank(t *testing.T) {
	for _, withIndex := range []bool{false, true} {
		plain := judgedService(t, withIndex, false, 0)
		s := judgedService(t, withIndex, true, 2)
		unweighted := judgedService(t, withIndex, true, 0)
		moved := 0
		for _, text := range rerankQueries {
			q := Query{Q: text, Page: paging.Page{Limit: new(20)}, Explain: true}
			want, err := plain.Search(caller, "t", q)
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.Search(caller, "t", q)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(slices.Sorted(slices.Values(agentIDs(got.Items))), slices.Sorted(slices.Values(agentIDs(want.Items)))) || got.Total != want.Total {
				t.Fatalf("%q: re-ranked %v (total %d), plain %v (total %d)", text, agentIDs(got.Items), got.Total, agentIDs(want.Items), want.Total)
			}
			if !slices.Equal(agentIDs(got.Items), agentIDs(want.Items)) {
				moved++
			}
			query := s.Rerank.Model.Embed(strings.ToLower(text))
			last := math.Inf(1)
			for _, h := range got.Items {
				if h.Explain == nil || h.Explain.Similarity == nil {
					t.Fatalf("%q: %s has no similarity", text, h.Card.AgentID)
				}
				sim := h.Explain.Similarity
				cv := s.Rerank.Model.Embed(cardText(h.Card))
				cos := 0.0
				for i := range cv {
					cos += float64(cv[i]) * float64(query[i])
				}
				rank := *h.Score/(*want.Items[0].Score) + 2*cos
				// The cards' embeddings are kept packed: their cosines within 0.001 of these.
				if math.Abs(sim.Cosine-cos) > 0.001 || math.Abs(sim.Rank-rank) > 0.002 || sim.Weight != 2 || sim.Rank > last {
					t.Fatalf("%q: %s: %+v, want cosine %.4f rank %.4f (after %.4f)", text, h.Card.AgentID, *sim, cos, rank, last)
				}
				last = sim.Rank
			}
			same, err := unweighted.Search(caller, "t", q)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(agentIDs(same.Items), agentIDs(want.Items)) {
				t.Errorf("%q with weight 0: %v, plain %v", text, agentIDs(same.Items), agentIDs(want.Items))
			}
		}
		if moved == 0 {
			t.Errorf("the encoder moved no card of %d queries", len(rerankQueries))
		}
	}
}

// TestRerankPages: pages of any size, followed by their cursors, give the re-ranked first 20
// matches and then the plain search's matches after them, each card once, with the same total;
// also for a caller who may not read some of the cards.
func TestRerankPages(t *testing.T) {
	for _, c := range []struct {
		withIndex bool
		hidden    hiding
	}{{false, nil}, {true, nil}, {true, hiding{"skedgo-tripgo-mcp-server", "nguyenvanduocit-jira-mcp", "quentincody-github-graphql-mcp-server"}}} {
		plain, s := judgedService(t, true, false, 0), judgedService(t, c.withIndex, true, 2)
		plain.Authz, s.Authz = c.hidden, c.hidden
		for _, text := range rerankQueries {
			q := Query{Q: text}
			block, _ := all(t, s, q, 20)
			rest, _ := all(t, plain, q, MaxLimit)
			if n := min(20, len(rest)); !slices.Equal(slices.Sorted(slices.Values(agentIDs(block[:n]))), slices.Sorted(slices.Values(agentIDs(rest[:n])))) {
				t.Fatalf("%q: re-ranked block %v, plain %v", text, agentIDs(block[:n]), agentIDs(rest[:n]))
			}
			want := append(agentIDs(block[:min(20, len(block))]), agentIDs(rest[min(20, len(rest)):])...)
			for _, limit := range []int{1, 3, 7, 20, 23, 100} {
				hits, totals := all(t, s, q, limit)
				if got := agentIDs(hits); !slices.Equal(got, want) {
					t.Fatalf("%q in pages of %d: %v, want %v", text, limit, got, want)
				}
				for _, n := range totals {
					if n != len(want) {
						t.Fatalf("%q in pages of %d: totals %v, want %d", text, limit, totals, len(want))
					}
				}
			}
		}
	}
}

// TestRerankCursorAfterACard: a card that enters the re-ranked block between two of its pages
// (here ahead of the first page's cards) does not make the next page show a card of the first
// again: it starts after the first page's last card.
func TestRerankCursorAfterACard(t *testing.T) {
	s := judgedService(t, false, true, 2)
	q := Query{Q: "translate documents", Page: paging.Page{Limit: new(5)}}
	first, err := s.Search(caller, "t", q)
	if err != nil || first.NextCursor == "" {
		t.Fatalf("%v %v", first, err)
	}
	store := s.Store.(*feedModel)
	store.mu.Lock()
	store.cards["translator"] = cards.Card{AgentID: "translator", Name: "Document translator", Description: "Translate documents.",
		ID: "id-translator", Revision: 1, Status: cards.StatusActive}
	store.mu.Unlock()
	q.Cursor = first.NextCursor
	second, err := s.Search(caller, "t", q)
	if err != nil {
		t.Fatal(err)
	}
	whole, err := s.Search(caller, "t", Query{Q: "translate documents", Page: paging.Page{Limit: new(20)}})
	if err != nil {
		t.Fatal(err)
	}
	order := agentIDs(whole.Items)
	last := slices.Index(order, first.Items[4].Card.AgentID)
	if order[0] != "translator" || last < 0 || !slices.Equal(agentIDs(second.Items), order[last+1:last+6]) {
		t.Fatalf("first page %v, second %v; the block now %v", agentIDs(first.Items), agentIDs(second.Items), order)
	}
}

// TestBlockCursorWithoutRerank: a cursor into a re-ranked block, given to a server that does not
// re-rank, is refused as invalid.
func TestBlockCursorWithoutRerank(t *testing.T) {
	s := judgedService(t, true, true, 2)
	limit := 5
	res, err := s.Search(caller, "t", Query{Q: "translate documents", Page: paging.Page{Limit: new(limit)}})
	if err != nil || res.NextCursor == "" {
		t.Fatalf("%v %v", res, err)
	}
	for _, withIndex := range []bool{false, true} {
		_, err = judgedService(t, withIndex, false, 0).Search(caller, "t", Query{Q: "translate documents", Page: paging.Page{Limit: new(limit), Cursor: res.NextCursor}})
		if !errors.Is(err, errBlockCursor) || fault.KindOf(err) != fault.Invalid {
			t.Fatalf("index %v: %v", withIndex, err)
		}
	}
}

// BenchmarkRerank times a q search over the judged cards with the index, plainly and re-ranked
// by the encoder, the queries' and cards' embeddings kept from a first round (as a server holds
// them once its cards were searched): what re-ranking adds to a search.
func BenchmarkRerank(b *testing.B) {
	queries := readJudgedQueries(b)
	for _, rerank := range []bool{false, true} {
		s := judgedService(b, true, rerank, 2)
		search := func(q string) {
			if _, err := s.Search(caller, "t", Query{Q: q, Page: paging.Page{Limit: new(10)}}); err != nil {
				b.Fatal(err)
			}
		}
		for _, q := range queries {
			search(q)
		}
		b.Run(map[bool]string{false: "plain", true: "encoder"}[rerank], func(b *testing.B) {
			for i := range b.N {
				search(queries[i%len(queries)])
			}
		})
	}
}

// readJudgedQueries reads the queries of bench/relevance.
func readJudgedQueries(tb testing.TB) []string {
	tb.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "bench", "relevance", "queries.tsv"))
	if err != nil {
		tb.Fatal(err)
	}
	var out []string
	for line := range strings.Lines(string(raw)) {
		if _, q, ok := strings.Cut(strings.TrimSpace(line), "\t"); ok && !strings.HasPrefix(line, "#") {
			out = append(out, q)
		}
	}
	return out
}

// BenchmarkRerankCold times the first re-ranked search over cards none of whose embeddings is
// kept (a server just started, or a tenant new to it): the query's and the block's 20 cards'
// embeddings are worked out in the search.
func BenchmarkRerankCold(b *testing.B) {
	s := judgedService(b, true, true, 2)
	queries := readJudgedQueries(b)
	for i := range b.N {
		b.StopTimer()
		fresh, err := NewReranker(s.Rerank.Model, 2, 20, 1000)
		if err != nil {
			b.Fatal(err)
		}
		s.Rerank = fresh
		b.StartTimer()
		if _, err := s.Search(caller, "t", Query{Q: queries[i%len(queries)], Page: paging.Page{Limit: new(10)}}); err != nil {
			b.Fatal(err)
		}
	}
}

// recentList is an ActivityStore whose tenants were all searched lately.
type recentList []tenants.ID

func (l recentList) Searched(context.Context, tenants.ID, time.Time) error { return nil }

func (l recentList) Recent(context.Context, time.Time) ([]tenants.ID, error) { return l, nil }

// TestRerankWarm: a warm start with the encoder works out the embeddings of the warmed tenants'
// cards after building their indexes, up to as many as the Reranker keeps: a search after it
// finds every card of its block kept.
func TestRerankWarm(t *testing.T) {
	m := semantictest.Model(t)
	if m == nil {
		t.Skip("the sentence encoder is not installed: " + semantictest.Install)
	}
	s := handService(true)
	defer s.Index.Close()
	var err error
	if s.Rerank, err = NewReranker(m, 2, 20, 1000); err != nil {
		t.Fatal(err)
	}
	w := &Warmer{Store: recentList{"t"}, Index: s.Index, Rerank: s.Rerank}
	w.Warm(context.Background(), time.Hour)
	if !w.Done() || s.Rerank.cards.Len() != len(searchtest.HandCorpus()) {
		t.Fatalf("after the warm start: done %v, %d cards' embeddings kept, want all %d", w.Done(), s.Rerank.cards.Len(), len(searchtest.HandCorpus()))
	}
	res, err := s.Search(caller, "t", Query{Q: "review pull"})
	if err != nil || len(res.Items) == 0 {
		t.Fatalf("%v %v", res, err)
	}
	for _, h := range res.Items {
		if !s.Rerank.cards.Contains(cardVersion{"t", h.Card.ID, h.Card.Revision}) {
			t.Errorf("%s's embedding is not kept", h.Card.AgentID)
		}
	}
	// The warm start's embeddings are counted; the search worked out only the query's, and found
	// its cards' kept.
	if st, n := s.Rerank.Stats(), uint64(len(searchtest.HandCorpus())); st.CardEmbeds != n || st.QueryEmbeds != 1 ||
		st.QueryHits != 0 || st.CardHits != uint64(len(res.Items)) || st.CardsKept != int(n) || st.QueriesKept != 1 || st.Embedding <= 0 {
		t.Errorf("stats %+v, want %d cards embedded and kept, 1 query, %d cards found kept", st, n, len(res.Items))
	}

	// Past what it keeps, the warm-up stops.
	big := judgedService(t, true, true, 2)
	defer big.Index.Close()
	if big.Rerank, err = NewReranker(m, 2, 20, 25); err != nil {
		t.Fatal(err)
	}
	n, err := big.Rerank.Warm(context.Background(), big.Index.store, []tenants.ID{"t"})
	if err != nil || n != 25 || big.Rerank.cards.Len() != 25 || big.Rerank.Stats().CardEmbeds != 25 {
		t.Fatalf("warmed %d (%v), %d kept, %d counted; want 25 of the 570 cards", n, err, big.Rerank.cards.Len(), big.Rerank.Stats().CardEmbeds)
	}
}
