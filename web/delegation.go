package web

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/agentcards/agentcards/cards/delegation"
	"github.com/agentcards/agentcards/tenants"
	"github.com/labstack/echo/v4"
)

// callbackPath is where agents post async results: /callbacks/delegations/{tenant}/{id}?token=.
// It is outside /v1 because agents hold no token of ours; the single-use token in the query
// authenticates the call (and stays out of the request log, which records the path only).
const callbackPath = "/callbacks/delegations"

// callbackURL builds an async delegation's callback URL on the configured public base URL, or
// else on the scheme and host the caller reached us at.
func (h *handlers) callbackURL(c echo.Context, tenant tenants.ID) delegation.CallbackURL {
	base := h.cfg.PublicURL
	if base == "" {
		base = c.Scheme() + "://" + c.Request().Host
	}
	base = strings.TrimRight(base, "/")
	return func(id, token string) string {
		return fmt.Sprintf("%s%s/%s/%s?token=%s", base, callbackPath, url.PathEscape(string(tenant)),
			url.PathEscape(id), url.QueryEscape(token))
	}
}

func (h *handlers) createDelegation(c echo.Context) error {
	var req delegation.Request
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	tenant := tenantOf(c)
	d, err := h.Delegations.Delegate(c.Request().Context(), tenant, req, h.callbackURL(c, tenant))
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, fmt.Sprintf("/v1/tenants/%s/delegations/%s", tenant, d.ID))
	if req.Mode == delegation.ModeAsync {
		return c.JSON(http.StatusAccepted, d)
	}
	return c.JSON(http.StatusOK, d)
}

func (h *handlers) getDelegation(c echo.Context) error {
	d, err := h.Delegations.Get(c.Request().Context(), tenantOf(c), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, d)
}

func (h *handlers) listDelegations(c echo.Context) error {
	f := delegation.Filter{
		Status: delegation.Status(c.QueryParam("status")), AgentID: c.QueryParam("agentId"),
		Before: c.QueryParam("cursor"),
	}
	if s := c.QueryParam("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return fmt.Errorf("limit must be a positive integer: %w", errInvalid)
		}
		f.Limit = n
	}
	list, next, err := h.Delegations.List(c.Request().Context(), tenantOf(c), f)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"items": list, "nextCursor": next})
}

// delegationResult takes an agent's async result. The body is read with the result size limit,
// so an oversized result is 413 however it is sent.
func (h *handlers) delegationResult(c echo.Context) error {
	body, err := readBody(c, mediaJSON)
	if errors.Is(err, errBodyTooLarge) {
		return fmt.Errorf("the result is too large: %w", delegation.ErrTooLarge)
	}
	if err != nil {
		return err
	}
	err = h.Delegations.Complete(c.Request().Context(), tenants.ID(c.Param("tenant")), c.Param("id"), c.QueryParam("token"), body)
	if err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
