package web

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards/search"
	"github.com/agentcards/agentcards/web/api"
)

// listChanges is GET /v1/tenants/{t}/cards:changes?since=&limit=: a page of the tenant's change
// feed after since, or the feed's present cursor without it.
func (h *handlers) listChanges(c echo.Context) error {
	q := c.QueryParams()
	if err := singleValued(q); err != nil {
		return err
	}
	asked, err := pageQuery(q)
	if err != nil {
		return err
	}
	if v, ok := q["since"]; ok && v[0] == "" {
		return fault.New(fault.Invalid, "since: must not be empty: invalid request")
	}
	page, err := h.Changes.ListChanges(c.Request().Context(), tenantOf(c), q.Get("since"), asked)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, changePage(page))
}

// changePage is the API's form of a page of the change feed.
func changePage(p search.FeedPage) api.ChangePage {
	out := api.ChangePage{Changes: make([]api.CardChange, len(p.Changes)), NextCursor: p.NextCursor, More: p.More}
	for i, c := range p.Changes {
		out.Changes[i] = api.CardChange{Op: c.Op, AgentID: c.AgentID, Revision: c.Revision, Card: c.Card}
	}
	return out
}
