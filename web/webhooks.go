package web

import (
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/webhooks"
	"github.com/agentcards/agentcards/web/api"
)

// createWebhook is POST /v1/tenants/{t}/webhooks with {"url", "types"?, "agentIds"?}: it
// subscribes the URL to the tenant's card changes from now on, and answers the subscription
// (201, Location).
func (h *handlers) createWebhook(c echo.Context) error {
	var in struct {
		URL      string   `json:"url"`
		Types    []string `json:"types"`
		AgentIDs []string `json:"agentIds"`
	}
	if err := decodeBody(c, &in); err != nil {
		return err
	}
	tenant := tenantOf(c)
	w, err := h.Webhooks.Create(c.Request().Context(), tenant, webhooks.Webhook{URL: in.URL, Types: in.Types, AgentIDs: in.AgentIDs})
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, fmt.Sprintf("/v1/tenants/%s/webhooks/%s", tenant, w.ID))
	return c.JSON(http.StatusCreated, w)
}

// listWebhooks is GET /v1/tenants/{t}/webhooks: the tenant's subscriptions, oldest first.
func (h *handlers) listWebhooks(c echo.Context) error {
	list, err := h.Webhooks.List(c.Request().Context(), tenantOf(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, api.WebhookList{Items: list, Total: len(list)})
}

// getWebhook is GET /v1/tenants/{t}/webhooks/{id}.
func (h *handlers) getWebhook(c echo.Context) error {
	w, err := h.Webhooks.Get(c.Request().Context(), tenantOf(c), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, w)
}

// updateWebhook is PATCH /v1/tenants/{t}/webhooks/{id}: the members sent change (a merge patch
// of url, types, agentIds and state).
func (h *handlers) updateWebhook(c echo.Context) error {
	body, err := readObject(c, mediaMergePatch, mediaJSON)
	if err != nil {
		return err
	}
	var in struct {
		URL      *string   `json:"url"`
		Types    *[]string `json:"types"`
		AgentIDs *[]string `json:"agentIds"`
		State    *string   `json:"state"`
	}
	if err := cards.DecodeStrict(body, &in); err != nil {
		return err
	}
	w, err := h.Webhooks.Update(c.Request().Context(), tenantOf(c), c.Param("id"),
		webhooks.Patch{URL: in.URL, Types: in.Types, AgentIDs: in.AgentIDs, State: in.State})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, w)
}

// removeWebhook is DELETE /v1/tenants/{t}/webhooks/{id}.
func (h *handlers) removeWebhook(c echo.Context) error {
	if err := h.Webhooks.Remove(c.Request().Context(), tenantOf(c), c.Param("id")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// listDeliveries is GET /v1/tenants/{t}/webhooks/{id}/deliveries?limit=: the subscription's
// last delivery attempts, newest first.
func (h *handlers) listDeliveries(c echo.Context) error {
	q := c.QueryParams()
	if err := singleValued(q); err != nil {
		return err
	}
	page, err := pageQuery(q)
	if err != nil {
		return err
	}
	list, err := h.Webhooks.Deliveries(c.Request().Context(), tenantOf(c), c.Param("id"), page)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, api.DeliveryList{Items: list, Total: len(list)})
}

// BaseURL is the URL this server is reached at, as async callbacks name it: PublicURL, or the
// loopback address it listens on; empty when neither says. Webhook events name their tenant's
// URL on it, and the AI Catalog its URLs.
func (c Config) BaseURL() string { return callbackBase(c) }
