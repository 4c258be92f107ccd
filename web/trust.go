package web

import (
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/web/api"
)

// listTrust is GET /v1/tenants/{t}/trust: the issuers of the tenant's trust policy, in domain
// order.
func (h *handlers) listTrust(c echo.Context) error {
	list, err := h.Trust.List(c.Request().Context(), tenantOf(c))
	if err != nil {
		return err
	}
	if list == nil {
		list = []tenants.TrustIssuer{}
	}
	return c.JSON(http.StatusOK, api.TrustIssuerList{Items: list, Total: len(list)})
}

// getTrust is GET /v1/tenants/{t}/trust/{domain}.
func (h *handlers) getTrust(c echo.Context) error {
	e, err := h.Trust.Get(c.Request().Context(), tenantOf(c), c.Param("domain"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, e)
}

// putTrust is PUT /v1/tenants/{t}/trust/{domain} with {"jwksUrl"} or {"keys"}: it creates the
// issuer of the domain or replaces it, weighs the cards it covers again, and answers both.
func (h *handlers) putTrust(c echo.Context) error {
	var in struct {
		JWKSURL string          `json:"jwksUrl"`
		Keys    json.RawMessage `json:"keys"`
	}
	if err := decodeBody(c, &in); err != nil {
		return err
	}
	e, w, err := h.Trust.Put(c.Request().Context(), tenantOf(c), tenants.TrustIssuer{Domain: c.Param("domain"), JWKSURL: in.JWKSURL, Keys: in.Keys})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, api.TrustPutted{Issuer: e, Cards: w})
}

// removeTrust is DELETE /v1/tenants/{t}/trust/{domain}: it removes the issuer and weighs the cards
// it covered again.
func (h *handlers) removeTrust(c echo.Context) error {
	w, err := h.Trust.Remove(c.Request().Context(), tenantOf(c), c.Param("domain"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, api.TrustRemoved{Cards: w})
}
