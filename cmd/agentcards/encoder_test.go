package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentcards/agentcards/cards/search/semantic/semantictest"
	"github.com/agentcards/agentcards/storage/storagetest"
	"github.com/agentcards/agentcards/web/webtest"
)

// TestServeEncoder: with search.encoder.model, serve re-ranks q searches: over real HTTP, the
// agent that says what the query asks in other words (public transport departures) comes before
// the one whose words match it better (workflow transitions), each of the first matches explains
// its similarity, and pages of one card, followed by their cursors, give the same order; the
// metrics count the embeddings worked out and those found kept. A model
// directory that holds no model stops serve with an error that names the setting.
func TestServeEncoder(t *testing.T) {
	dir := semantictest.Dir(t)
	if dir == "" {
		t.Skip("the sentence encoder is not installed: " + semantictest.Install)
	}
	_, dsn := storagetest.EmptyDatabase(t, "sqlite")
	// No warm start: the metrics below count this test's searches alone.
	s := startServe(t, serveConfig(t, "sqlite", dsn, "warmWindow: 0s", "encoder:", "  model: "+dir, "  weight: 2"))
	root := webtest.Mint(t, webtest.Tokens(t), "root", "", true)
	s.api.CreateTenant(t, root, "acme", "alice")
	tok := webtest.Mint(t, webtest.Tokens(t), "alice", "acme", false)
	for _, c := range []struct{ id, name, description string }{ // from bench/relevance (q58)
		{"skedgo-tripgo-mcp-server", "skedgo/tripgo-mcp-server", "Provides tools from the TripGo API for multi-modal trip planning, " +
			"transport locations, and public transport departures, including real-time information."},
		{"nguyenvanduocit-jira-mcp", "nguyenvanduocit/jira-mcp", "A Go-based MCP connector for Jira that enables AI assistants like " +
			"Claude to interact with Atlassian Jira. This tool provides a seamless interface for AI models to perform common Jira " +
			"operations including issue management, sprint planning, and workflow transitions."},
		{"public-apis", "Public APIs", "A directory of free public APIs, searchable by topic."},
		{"weather", "Weather", "Current weather and forecasts for any city."},
	} {
		webtest.Expect(t, s.api.Do(t, http.MethodPost, "/v1/tenants/acme/cards", tok, map[string]any{
			"agentId": c.id, "name": c.name, "description": c.description, "protocols": []string{"http"},
			"endpoint": "https://agents.example.com/" + c.id,
		}), http.StatusCreated)
	}
	type page struct {
		Items []struct {
			Card    struct{ AgentID string }
			Score   float64
			Explain struct {
				Similarity *struct{ Cosine, Weight, Rank float64 }
			}
		}
		NextCursor string
	}
	search := func(query string) page {
		t.Helper()
		r := s.api.Do(t, http.MethodGet, "/v1/tenants/acme/cards?q=public+transit+timetables&explain=true"+query, tok, nil)
		webtest.Expect(t, r, http.StatusOK)
		var p page
		r.JSON(t, &p)
		return p
	}
	whole := search("&limit=10")
	var order []string
	at := map[string]int{}
	for i, h := range whole.Items {
		if h.Explain.Similarity == nil || h.Explain.Similarity.Weight != 2 || i > 0 && h.Explain.Similarity.Rank > whole.Items[i-1].Explain.Similarity.Rank {
			t.Fatalf("%s at %d: %+v", h.Card.AgentID, i, whole)
		}
		order = append(order, h.Card.AgentID)
		at[h.Card.AgentID] = i
	}
	tripgo, jira := whole.Items[at["skedgo-tripgo-mcp-server"]], whole.Items[at["nguyenvanduocit-jira-mcp"]]
	if len(order) != 3 || tripgo.Score >= jira.Score || at["skedgo-tripgo-mcp-server"] > at["nguyenvanduocit-jira-mcp"] {
		t.Fatalf("re-ranked: %v, with tripgo %+v and jira %+v", order, tripgo, jira)
	}
	var paged []string
	for cursor := ""; ; {
		p := search("&limit=1" + map[bool]string{true: "&cursor=" + cursor}[cursor != ""])
		for _, h := range p.Items {
			paged = append(paged, h.Card.AgentID)
		}
		if cursor = p.NextCursor; cursor == "" {
			break
		}
	}
	if !slices.Equal(paged, order) {
		t.Fatalf("in pages of 1: %v, in one page: %v", paged, order)
	}
	// The four searches embedded the query once and the three cards once each; the three pages
	// after the first found them kept.
	families := scrapeMetrics(t, metricsBase(t, s))
	for _, c := range []struct {
		family, kind string
		want         float64
	}{
		{"agentcards_encoder_embeddings_total", "query", 1}, {"agentcards_encoder_embeddings_total", "card", 3},
		{"agentcards_encoder_kept_hits_total", "query", 3}, {"agentcards_encoder_kept_hits_total", "card", 9},
		{"agentcards_encoder_kept_embeddings", "query", 1}, {"agentcards_encoder_kept_embeddings", "card", 3},
	} {
		if v, ok := metricSample(families, c.family, map[string]string{"kind": c.kind}); !ok || v != c.want {
			t.Errorf("%s{kind=%q}: %v (present %v), want %v", c.family, c.kind, v, ok, c.want)
		}
	}
	if v, _ := metricSample(families, "agentcards_encoder_embedding_seconds_total", nil); v <= 0 {
		t.Errorf("agentcards_encoder_embedding_seconds_total %v after four embeddings", v)
	}

	err := runConfig(t, serveConfig(t, "sqlite", dsn, "encoder:", "  model: "+t.TempDir()))
	if err == nil || !strings.Contains(err.Error(), "search.encoder.model") {
		t.Fatalf("serve with an empty model directory: %v", err)
	}
}

// runConfig runs serve with config and returns its error, or fails the test if it is still
// serving after 20 s.
func runConfig(t *testing.T, config string) error {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := run(ctx, []string{"serve", "--config", path}, &webtest.LogBuffer{}, &webtest.LogBuffer{}, nil)
	if ctx.Err() != nil {
		t.Fatalf("serve ran until stopped (%v)", err)
	}
	return err
}
