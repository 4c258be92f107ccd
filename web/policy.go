package web

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/agentcards/agentcards/authz"
)

func (h *handlers) listPolicies(c echo.Context) error {
	list, err := h.Enforcers.Policies(c.Request().Context(), string(tenantOf(c)))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"items": list, "total": len(list)})
}

func (h *handlers) addPolicy(c echo.Context) error {
	var p authz.Policy
	if err := decodeBody(c, &p); err != nil {
		return err
	}
	created, err := h.Enforcers.AddPolicy(c.Request().Context(), string(tenantOf(c)), p)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return c.JSON(status, p)
}

// removePolicy takes the policy from the query (?subject=&object=&action=&effect=) or a body.
func (h *handlers) removePolicy(c echo.Context) error {
	p := authz.Policy{Subject: c.QueryParam("subject"), Object: c.QueryParam("object"),
		Action: c.QueryParam("action"), Effect: c.QueryParam("effect")}
	if c.Request().ContentLength != 0 && p == (authz.Policy{}) {
		if err := decodeBody(c, &p); err != nil {
			return err
		}
	}
	if err := h.Enforcers.RemovePolicy(c.Request().Context(), string(tenantOf(c)), p); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (h *handlers) authorize(c echo.Context) error {
	var q authz.Question
	if err := decodeBody(c, &q); err != nil {
		return err
	}
	d, err := h.Enforcers.Authorize(c.Request().Context(), string(tenantOf(c)), q)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, d)
}
