package web

import (
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/follow"
	"github.com/agentcards/agentcards/web/api"
)

// createSource is POST /v1/tenants/{t}/sources with {"kind", "url" | "urls", "token"?,
// "intervalSeconds"?}: the tenant follows the registry from now on, and the answer is the source
// (201, Location), syncing.
func (h *handlers) createSource(c echo.Context) error {
	var in struct {
		Kind     string   `json:"kind"`
		URL      string   `json:"url"`
		URLs     []string `json:"urls"`
		Token    string   `json:"token"`
		Interval int      `json:"intervalSeconds"`
	}
	if err := decodeBody(c, &in); err != nil {
		return err
	}
	tenant := tenantOf(c)
	src, err := h.Sources.Create(c.Request().Context(), tenant, follow.Spec{Kind: in.Kind, URL: in.URL, URLs: in.URLs, Token: in.Token, Interval: in.Interval})
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, fmt.Sprintf("/v1/tenants/%s/sources/%s", tenant, src.ID))
	return c.JSON(http.StatusCreated, src)
}

// listSources is GET /v1/tenants/{t}/sources: the tenant's sources, oldest first.
func (h *handlers) listSources(c echo.Context) error {
	list, err := h.Sources.List(c.Request().Context(), tenantOf(c))
	if err != nil {
		return err
	}
	if list == nil {
		list = []follow.Source{}
	}
	return c.JSON(http.StatusOK, api.SourceList{Items: list, Total: len(list)})
}

// getSource is GET /v1/tenants/{t}/sources/{id}.
func (h *handlers) getSource(c echo.Context) error {
	src, err := h.Sources.Get(c.Request().Context(), tenantOf(c), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, src)
}

// updateSource is PATCH /v1/tenants/{t}/sources/{id}: a merge patch of token and
// intervalSeconds.
func (h *handlers) updateSource(c echo.Context) error {
	body, err := readObject(c, mediaMergePatch, mediaJSON)
	if err != nil {
		return err
	}
	var in struct {
		Token    *string `json:"token"`
		Interval *int    `json:"intervalSeconds"`
	}
	if err := cards.DecodeStrict(body, &in); err != nil {
		return err
	}
	src, err := h.Sources.Update(c.Request().Context(), tenantOf(c), c.Param("id"), in.Token, in.Interval)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, src)
}

// removeSource is DELETE /v1/tenants/{t}/sources/{id}: the source stops syncing at once and is
// answered removing (202); its cards are removed, then the source, in the background.
func (h *handlers) removeSource(c echo.Context) error {
	src, err := h.Sources.Remove(c.Request().Context(), tenantOf(c), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, src)
}
