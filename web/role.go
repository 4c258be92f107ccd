package web

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/agentcards/agentcards/authz"
)

func (h *handlers) listRoles(c echo.Context) error {
	list, err := h.Enforcers.Roles(c.Request().Context(), string(tenantOf(c)))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"items": list, "total": len(list)})
}

func (h *handlers) grantRole(c echo.Context) error {
	var a authz.Assignment
	if err := decodeBody(c, &a); err != nil {
		return err
	}
	created, err := h.Enforcers.Grant(c.Request().Context(), string(tenantOf(c)), a)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return c.JSON(status, a)
}

// revokeRole takes the assignment from the query (?subject=&role=) or, when there is one, a body.
func (h *handlers) revokeRole(c echo.Context) error {
	a := authz.Assignment{Subject: c.QueryParam("subject"), Role: c.QueryParam("role")}
	if c.Request().ContentLength != 0 && a.Subject == "" && a.Role == "" {
		if err := decodeBody(c, &a); err != nil {
			return err
		}
	}
	if err := h.Enforcers.Revoke(c.Request().Context(), string(tenantOf(c)), a); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
