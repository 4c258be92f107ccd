package web

import (
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/tenants"
)

const mediaJSON = "application/json"

// decodeBody reads a small JSON object body strictly into v.
func decodeBody(c echo.Context, v any) error {
	body, err := readObject(c, mediaJSON)
	if err != nil {
		return err
	}
	return cards.DecodeStrict(body, v)
}

func (h *handlers) createTenant(c echo.Context) error {
	var in tenants.Input
	if err := decodeBody(c, &in); err != nil {
		return err
	}
	t, err := h.Tenants.Create(c.Request().Context(), in)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, fmt.Sprintf("/v1/tenants/%s", t.ID))
	return c.JSON(http.StatusCreated, t)
}

func (h *handlers) listTenants(c echo.Context) error {
	list, err := h.Tenants.List(c.Request().Context())
	if err != nil {
		return err
	}
	if list == nil {
		list = []tenants.Tenant{}
	}
	return c.JSON(http.StatusOK, map[string]any{"items": list, "total": len(list)})
}

func (h *handlers) getTenant(c echo.Context) error {
	t, err := h.Tenants.Get(c.Request().Context(), tenants.ID(c.Param("tenant")))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, t)
}

// updateTenant changes the fields the body names, as a JSON merge patch (RFC 7396) does; it
// takes application/merge-patch+json as every PATCH does, and application/json.
func (h *handlers) updateTenant(c echo.Context) error {
	body, err := readObject(c, mediaMergePatch, mediaJSON)
	if err != nil {
		return err
	}
	var p tenants.Patch
	if err := cards.DecodeStrict(body, &p); err != nil {
		return err
	}
	t, err := h.Tenants.Update(c.Request().Context(), tenants.ID(c.Param("tenant")), p)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, t)
}

func (h *handlers) deleteTenant(c echo.Context) error {
	if err := h.Tenants.Delete(c.Request().Context(), tenants.ID(c.Param("tenant"))); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
