package web

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/tenants/audit"
	"github.com/agentcards/agentcards/web/api"
	"github.com/agentcards/agentcards/web/catalog"
)

// listAudit is GET /v1/tenants/{t}/audit: a page of the tenant's trail, newest first.
func (h *handlers) listAudit(c echo.Context) error {
	q := c.QueryParams()
	if err := singleValued(q); err != nil {
		return err
	}
	asked, err := pageQuery(q)
	if err != nil {
		return err
	}
	f := audit.Filter{Principal: q.Get("principal"), Action: q.Get("action"), ObjectPrefix: q.Get("object")}
	for _, t := range []struct {
		name string
		dst  *time.Time
	}{{"since", &f.Since}, {"until", &f.Until}} {
		v := q.Get(t.name)
		if v == "" {
			continue
		}
		if *t.dst, err = time.Parse(time.RFC3339Nano, v); err != nil {
			return fault.Errorf(fault.Invalid, "%s: must be an RFC 3339 time, as 2026-12-01T10:00:00Z: invalid request", t.name)
		}
	}
	list, next, err := h.Audit.List(c.Request().Context(), tenantOf(c), f, asked)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, api.AuditPage{Items: list, NextCursor: next})
}

// named tells the services which request of the catalogue a route serves, and its id, for the
// audit trail of the writes it makes (and of its refusals, when it is a write).
func named(r catalog.Request) echo.MiddlewareFunc {
	write := !r.ReadOnly()
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			c.SetRequest(req.WithContext(authz.WithRequest(req.Context(), authz.Request{Name: r.Name, ID: requestID(c), Write: write})))
			return next(c)
		}
	}
}
