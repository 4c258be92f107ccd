package a2a

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/web/outbound"
)

// MaxImportBytes bounds a fetched card or key set.
const MaxImportBytes = 1 << 20

// Doer sends HTTP requests; the SSRF-guarded client of web/outbound is the one the service uses.
type Doer interface {
	Do(*http.Request) (*http.Response, error)
}

// statusError is the status of an answer that was not 2xx, for errors.As.
type statusError int

func (e statusError) Error() string { return fmt.Sprintf("status %d", int(e)) }

// fetchJSON GETs url with the injected client and returns its body, at most limit bytes. field
// names where the URL came from ("url", "jku") in the errors, which are fault.URLBlocked for an
// address or redirect the guard refuses, fault.FetchFailed when nothing usable came back, and
// fault.Invalid for an answer that is not a document (4xx, too large). The causes, which may
// name resolved addresses, stay behind the messages.
func fetchJSON(ctx context.Context, c Doer, field, url string, limit int64) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fault.Wrap(err, fault.FetchFailed, "%s: %s could not be fetched", field, url)
	}
	req.Header.Set("Accept", "application/json")
	res, err := c.Do(req)
	if outbound.Blocked(err) || errors.Is(err, outbound.ErrRedirect) {
		return nil, fault.Wrap(err, fault.URLBlocked, "%s: %s points to an address or a redirect this server does not fetch", field, url)
	}
	if err != nil {
		return nil, fault.Wrap(err, fault.FetchFailed, "%s: %s could not be fetched", field, url)
	}
	defer res.Body.Close()
	if res.StatusCode >= 500 {
		// The server there failed: a gateway's 502, as when it cannot be reached at all.
		return nil, fault.Errorf(fault.FetchFailed, "%s: %s answered %d", field, url, res.StatusCode)
	}
	if res.StatusCode/100 != 2 {
		return nil, fault.Wrap(statusError(res.StatusCode), fault.Invalid, "%s: %s answered %d: invalid", field, url, res.StatusCode)
	}
	b, err := io.ReadAll(io.LimitReader(res.Body, limit+1))
	if err != nil {
		return nil, fault.Wrap(err, fault.FetchFailed, "%s: %s could not be read", field, url)
	}
	if int64(len(b)) > limit {
		return nil, fault.Errorf(fault.Invalid, "%s: %s: the document is over %d bytes: invalid", field, url, limit)
	}
	return bytes.TrimSpace(b), nil
}
