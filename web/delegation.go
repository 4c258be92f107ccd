package web

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards/delegation"
	"github.com/agentcards/agentcards/tenants"
)

// callbackPath is where agents post async results: /callbacks/delegations/{tenant}/{id}?token=.
// It is outside /v1 because agents hold no token of ours; the single-use token in the query
// authenticates the call (and stays out of the request log, which records the path only).
const callbackPath = "/callbacks/delegations"

// callbackBase is where agents post async results: the configured public URL, or else the
// listen address when it is loopback (only agents on this machine could reach it anyway). It is
// never taken from a request, whose Host header the caller chooses. "" when neither applies.
func callbackBase(cfg Config) string {
	if cfg.PublicURL != "" {
		return strings.TrimRight(cfg.PublicURL, "/")
	}
	host, _, err := net.SplitHostPort(cfg.ListenAddr)
	if err != nil {
		return ""
	}
	if ip, err := netip.ParseAddr(host); (err == nil && ip.IsLoopback()) || host == "localhost" {
		return "http://" + cfg.ListenAddr
	}
	return ""
}

// callbackURL builds an async delegation's callback URL on h.callbackBase.
func (h *handlers) callbackURL(tenant tenants.ID) delegation.CallbackURL {
	base := h.callbackBase
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
	if req.Mode == delegation.ModeAsync && h.callbackBase == "" {
		return errNoCallbacks
	}
	tenant := tenantOf(c)
	d, err := h.Delegations.Delegate(c.Request().Context(), tenant, req, h.callbackURL(tenant))
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
	q := c.QueryParams()
	if err := singleValued(q); err != nil {
		return err
	}
	asked, err := pageQuery(q)
	if err != nil {
		return err
	}
	f := delegation.Filter{Status: delegation.Status(q.Get("status")), AgentID: q.Get("agentId")}
	list, next, err := h.Delegations.List(c.Request().Context(), tenantOf(c), f, asked)
	if err != nil {
		return err
	}
	page := struct {
		Items      []delegation.Delegation `json:"items"`
		NextCursor string                  `json:"nextCursor,omitempty"`
	}{Items: list, NextCursor: next}
	return c.JSON(http.StatusOK, page)
}

// importDelegations writes another registry's delegation records (delegations.import).
func (h *handlers) importDelegations(c echo.Context) error {
	var in delegation.Import
	if err := decodeBody(c, &in); err != nil {
		return err
	}
	out, err := h.Delegations.Import(c.Request().Context(), tenantOf(c), in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// delegationResult takes an agent's async result. The body is read with the result size limit,
// so an oversized result is 413 however it is sent.
func (h *handlers) delegationResult(c echo.Context) error {
	body, err := readBody(c, mediaJSON)
	if errors.Is(err, fault.TooLarge) {
		return fault.New(fault.TooLarge, "the result is too large: result is too large")
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
