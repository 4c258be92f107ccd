// Package paging is how every list of the service pages: at most a limit of items, and an opaque
// keyset cursor bound to its list. Searches, the A2A agent directory, delegations and the audit
// trail all take a Page, so every door reads limit and cursor once and every list refuses the
// same values in the same words.
package paging

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"

	"github.com/agentcards/agentcards/authz/fault"
)

// Page asks a list for one page: at most Limit items (nil: the list's default), after the
// position Cursor names ("": from the start).
type Page struct {
	// Limit is a pointer so that an explicit 0 is refused rather than taken for the default.
	Limit  *int   `json:"limit"`
	Cursor string `json:"cursor"`
}

// Check returns how many items the page holds: Limit, or def when none was asked for. A limit
// outside 1 to max is fault.Invalid, naming limit.
func (p Page) Check(def, max int) (int, error) {
	if p.Limit == nil {
		return def, nil
	}
	if *p.Limit < 1 || *p.Limit > max {
		return 0, fault.Errorf(fault.Invalid, "limit: must be between 1 and %d", max)
	}
	return *p.Limit, nil
}

// ErrCursor refuses a cursor that is not one of its list's: mangled, made up, or another list's.
// DecodeCursor returns it; a list that checks the position it decoded refuses with it too.
var ErrCursor = fault.New(fault.Invalid, "cursor: not a cursor of this list (pass nextCursor as it came)")

// EncodeCursor returns the cursor that resumes list after v, the position of the page's last
// item (JSON-encodable: an id, or a struct of the sort keys). Clients hold it as an opaque
// string; it is marked with the list's name, so a cursor of another list is refused.
func EncodeCursor(list string, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		// Positions are ids and plain structs of ours: this is a bug, not a request's fault.
		panic("paging.EncodeCursor: " + err.Error())
	}
	return base64.RawURLEncoding.EncodeToString(append([]byte(list+":"), b...))
}

// DecodeCursor reads a cursor of list into v, the position EncodeCursor was given. A cursor that
// is not base64url, not of list, or not exactly one JSON value of v's shape is ErrCursor.
func DecodeCursor(list, s string, v any) error {
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil {
		return ErrCursor
	}
	b, ok := bytes.CutPrefix(b, []byte(list+":"))
	if !ok {
		return ErrCursor
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return ErrCursor
	}
	if _, err := dec.Token(); err != io.EOF {
		return ErrCursor
	}
	return nil
}
