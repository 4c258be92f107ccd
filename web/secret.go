package web

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// putSecret stores the static secret of a card's endpoint: {"secret": "...", "header"?: "..."}.
// It answers 204 and never echoes the secret; no route returns it.
func (h *handlers) putSecret(c echo.Context) error {
	var in struct {
		Secret string `json:"secret"`
		Header string `json:"header"`
	}
	if err := decodeBody(c, &in); err != nil {
		return err
	}
	err := h.Secrets.Set(c.Request().Context(), tenantOf(c), c.Param("agentId"), in.Secret, in.Header)
	if err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (h *handlers) deleteSecret(c echo.Context) error {
	if err := h.Secrets.Remove(c.Request().Context(), tenantOf(c), c.Param("agentId")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
