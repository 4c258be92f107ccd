package web

import (
	"errors"
	"net/url"
	"strconv"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/tenants/paging"
)

// pageQuery reads the limit and cursor query parameters of a list into the page asked for: each
// at most once, limit a whole number, cursor not empty. Whether the limit is in range and the
// cursor one of the list's is the list's to say (paging.Page).
func pageQuery(q url.Values) (paging.Page, error) {
	var p paging.Page
	if values, ok := q["limit"]; ok {
		var s string
		if err := single("limit", values, &s); err != nil {
			return p, err
		}
		// A number too large for an int is still a number: Atoi gives the bound, which the
		// list refuses as out of range.
		n, err := strconv.Atoi(s)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return p, fault.New(fault.Invalid, "limit: must be a whole number")
		}
		p.Limit = &n
	}
	if values, ok := q["cursor"]; ok {
		if err := single("cursor", values, &p.Cursor); err != nil {
			return p, err
		}
		if p.Cursor == "" {
			return p, fault.New(fault.Invalid, "cursor: must not be empty: invalid request")
		}
	}
	return p, nil
}
