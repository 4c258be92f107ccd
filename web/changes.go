package web

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards/search"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/web/api"
)

// listChanges is GET /v1/tenants/{t}/cards:changes?since=&limit=: a page of the tenant's change
// feed after since, or the feed's present cursor without it; with Accept: text/event-stream, the
// feed as a live stream (streamChanges).
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
	if h.Streams != nil && wantsStream(c.Request()) {
		return h.streamChanges(c, q.Get("since"), asked)
	}
	tenant := tenantOf(c)
	page, err := h.Changes.ListChanges(c.Request().Context(), tenant, q.Get("since"), asked)
	if err != nil {
		return err
	}
	return h.signedJSON(c, tenant, changePage(page))
}

// pageHeader is the protected header of the tenant's signed pages and events, beside alg and kid.
func pageHeader(tenant tenants.ID) map[string]any {
	return map[string]any{"typ": "JOSE", "tenant": string(tenant), "iat": time.Now().Unix()}
}

// signedJSON answers v as c.JSON does, signed with the service's key over the body's bytes
// (api.SignatureHeader), so that whoever keeps the page can show it came from this service and
// tenant. The protected header names the tenant and when it was signed. Unsigned on a server
// without keys.
func (h *handlers) signedJSON(c echo.Context, tenant tenants.ID, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	body = append(body, '\n') // as c.JSON ends it
	if err := h.signBody(c, tenant, body); err != nil {
		return err
	}
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, body)
}

// signBody sets api.SignatureHeader to the service's signature of body, the answer's exact
// bytes, with the tenant's page header (pageHeader). It sets nothing on a server without keys.
func (h *handlers) signBody(c echo.Context, tenant tenants.ID, body []byte) error {
	if h.ServiceKeys == nil {
		return nil
	}
	protected, sig, err := h.ServiceKeys.SignDetached(pageHeader(tenant), body)
	if err != nil {
		return err
	}
	c.Response().Header().Set(api.SignatureHeader, protected+".."+sig)
	return nil
}

// changePage is the API's form of a page of the change feed.
func changePage(p search.FeedPage) api.ChangePage {
	out := api.ChangePage{Changes: make([]api.CardChange, len(p.Changes)), NextCursor: p.NextCursor, More: p.More}
	for i, c := range p.Changes {
		out.Changes[i] = api.CardChange{Op: c.Op, AgentID: c.AgentID, Revision: c.Revision, Card: c.Card}
	}
	return out
}
