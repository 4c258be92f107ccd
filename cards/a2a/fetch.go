package a2a

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/agentcards/agentcards/cards"
)

// ErrFetch is returned (wrapped) when a card or key set could not be fetched from its URL; test it
// with errors.Is.
var ErrFetch = errors.New("fetch failed")

// MaxImportBytes bounds a fetched card or key set.
const MaxImportBytes = 1 << 20

// Doer sends HTTP requests; the SSRF-guarded client of cards/outbound is the one the service uses.
type Doer interface {
	Do(*http.Request) (*http.Response, error)
}

// fetchJSON GETs url with the injected client and returns its body, at most limit bytes.
func fetchJSON(ctx context.Context, c Doer, url string, limit int64) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFetch, err)
	}
	req.Header.Set("Accept", "application/json")
	res, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %w", url, ErrFetch, err)
	}
	defer res.Body.Close()
	if res.StatusCode >= 500 {
		// The server there failed: a gateway's 502, as when it cannot be reached at all.
		return nil, fmt.Errorf("%s answered %d: %w", url, res.StatusCode, ErrFetch)
	}
	if res.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%s answered %d: %w", url, res.StatusCode, cards.ErrInvalid)
	}
	body, err := readLimited(res.Body, limit)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", url, err)
	}
	return body, nil
}

// readLimited reads at most limit bytes, failing beyond.
func readLimited(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFetch, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("the document is over %d bytes: %w", limit, cards.ErrInvalid)
	}
	return bytes.TrimSpace(b), nil
}
