package web

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/web/api"
)

// listSynonyms is GET /v1/tenants/{t}/synonyms: the tenant's synonym sets, in id order.
func (h *handlers) listSynonyms(c echo.Context) error {
	list, err := h.Synonyms.List(c.Request().Context(), tenantOf(c))
	if err != nil {
		return err
	}
	if list == nil {
		list = []tenants.SynonymSet{}
	}
	return c.JSON(http.StatusOK, api.SynonymList{Items: list, Total: len(list)})
}

// putSynonyms is PUT /v1/tenants/{t}/synonyms/{id} with {"words": [...]}: it creates the set or
// replaces the set of that id, and answers it as stored.
func (h *handlers) putSynonyms(c echo.Context) error {
	var in struct {
		Words []string `json:"words"`
	}
	if err := decodeBody(c, &in); err != nil {
		return err
	}
	set, err := h.Synonyms.Put(c.Request().Context(), tenantOf(c), tenants.SynonymSet{ID: c.Param("id"), Words: in.Words})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, set)
}

// removeSynonyms is DELETE /v1/tenants/{t}/synonyms/{id}.
func (h *handlers) removeSynonyms(c echo.Context) error {
	if err := h.Synonyms.Remove(c.Request().Context(), tenantOf(c), c.Param("id")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
