package web

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/delegation"
	"github.com/agentcards/agentcards/cards/search"
	"github.com/agentcards/agentcards/cards/search/index"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/tenants/paging"
	"github.com/agentcards/agentcards/web/api"
)

// agentkit-mesh's HTTP control plane, per tenant under /compat/agentkit-mesh/{tenant} (the
// mesh.* requests of the catalogue): its routes, bodies, answers and statuses, carried out by the
// same services as the cards.* and delegations.* requests, so the same gates, policies, audit
// trail and metrics apply. An agent's name is its card's agentId.

// Bounds of the answers agentkit-mesh gives whole.
const (
	// meshListMax bounds the agents GET /v1/agents and /v1/discover answer.
	meshListMax = 1000
	// meshDelegationsMax bounds the records of one GET /v1/delegations.
	meshDelegationsMax = 1000
	// meshDelegationsDefault is its page without a limit, as agentkit-mesh's.
	meshDelegationsDefault = 50
)

// meshAccepted is the result agentkit-mesh gives an async delegation its agent accepted.
const meshAccepted = "Task accepted, awaiting async result"

func (h *handlers) meshHealth(c echo.Context) error {
	return c.JSON(http.StatusOK, api.Status{Status: "ok"})
}

// meshAgentOf is a card as agentkit-mesh's agent record; kind is how its calls carry their
// credential ("" for none).
func meshAgentOf(c cards.Card, kind string) api.MeshAgent {
	a := api.MeshAgent{Name: c.AgentID, Description: c.Description, Capabilities: make([]string, 0, len(c.Capabilities)),
		Resources: make([]api.MeshResource, 0, len(c.Resources)), Endpoint: c.Endpoint, Protocol: "http",
		RegisteredAt: api.MeshTime(c.CreatedAt), LastSeen: api.MeshTime(c.UpdatedAt)}
	for _, cp := range c.Capabilities {
		a.Capabilities = append(a.Capabilities, cp.Name)
	}
	for _, r := range c.Resources {
		a.Resources = append(a.Resources, api.MeshResource{URI: r.URI, Access: r.Access})
	}
	if len(c.Protocols) > 0 {
		a.Protocol = c.Protocols[0]
	}
	if l := c.Liveness; l != nil && l.LastSeenAt != nil && l.LastSeenAt.After(c.UpdatedAt) {
		a.LastSeen = api.MeshTime(*l.LastSeenAt)
	}
	if kind != "" {
		a.Auth = &api.MeshAuthType{Type: kind}
	}
	return a
}

// secretKinds says how each card's calls carry their credential; none without endpoint secrets.
func (h *handlers) secretKinds(ctx context.Context, tenant tenants.ID, cs []cards.Card) (map[string]string, error) {
	if h.Secrets == nil {
		return nil, nil
	}
	return h.Secrets.Kinds(ctx, tenant, cs)
}

func (h *handlers) meshAgents(c echo.Context) error {
	ctx, tenant := c.Request().Context(), tenantOf(c)
	// Every agent, as agentkit-mesh lists them: disabled cards too.
	q := search.Query{Status: []string{string(cards.StatusActive), string(cards.StatusDeprecated), string(cards.StatusDisabled)}}
	hits, err := h.searchAll(ctx, tenant, q, meshListMax)
	if err != nil {
		return err
	}
	list := make([]cards.Card, len(hits))
	for i, hit := range hits {
		list[i] = hit.Card
	}
	kinds, err := h.secretKinds(ctx, tenant, list)
	if err != nil {
		return err
	}
	out := make([]api.MeshAgent, len(list))
	for i, card := range list {
		out[i] = meshAgentOf(card, kinds[card.AgentID])
	}
	return c.JSON(http.StatusOK, out)
}

// searchAll answers the search's hits page after page, up to max of them (0: as many as a page
// has, once).
func (h *handlers) searchAll(ctx context.Context, tenant tenants.ID, q search.Query, max int) ([]search.Hit, error) {
	var hits []search.Hit
	for {
		limit := min(search.MaxLimit, max-len(hits))
		q.Page.Limit = &limit
		res, err := h.Search.Search(ctx, tenant, q)
		if err != nil {
			return nil, err
		}
		hits = append(hits, res.Items...)
		if res.NextCursor == "" || len(hits) >= max {
			return hits, nil
		}
		q.Page.Cursor = res.NextCursor
	}
}

// meshAgent answers one card as agentkit-mesh's record.
func (h *handlers) meshAgent(c echo.Context, status int, card cards.Card) error {
	kinds, err := h.secretKinds(c.Request().Context(), tenantOf(c), []cards.Card{card})
	if err != nil {
		return err
	}
	return c.JSON(status, meshAgentOf(card, kinds[card.AgentID]))
}

func (h *handlers) meshGetAgent(c echo.Context) error {
	card, err := h.Cards.Get(c.Request().Context(), tenantOf(c), c.Param("name"))
	if err != nil {
		return err
	}
	return h.meshAgent(c, http.StatusOK, card)
}

func (h *handlers) meshRemoveAgent(c echo.Context) error {
	if err := h.Cards.Delete(c.Request().Context(), tenantOf(c), c.Param("name"), cards.Precondition{}); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, api.MeshOK{OK: true})
}

func (h *handlers) meshHeartbeat(c echo.Context) error {
	if _, err := h.Cards.Heartbeat(c.Request().Context(), tenantOf(c), c.Param("name")); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, api.MeshOK{OK: true})
}

// meshRegisterAttempts bounds the reads and conditional writes of one registration racing
// other writes of the same card.
const meshRegisterAttempts = 3

// meshRegister registers an agent, or replaces what agentkit-mesh's record holds of the card of
// that name (description, capabilities, resources, endpoint, protocol, credential), keeping the
// rest of it: its tags, its capabilities' titles and descriptions, its other protocols. The
// credential is sealed as an endpoint secret, or removed when none is sent, as agentkit-mesh
// replaces it.
func (h *handlers) meshRegister(c echo.Context) error {
	var in api.MeshAgentsRegister
	if err := decodeBody(c, &in); err != nil {
		return err
	}
	if in.Name == "" || in.Endpoint == "" {
		return fault.New(fault.Invalid, "name and endpoint are required")
	}
	secret, header, err := meshCredential(in.Auth)
	if err != nil {
		return err
	}
	if secret != "" && h.Secrets == nil {
		return fault.New(fault.Invalid, "auth: this server keeps no endpoint credentials (its operator has not set "+
			"delegation.secretKey); register the agent without auth: invalid")
	}
	ctx, tenant := c.Request().Context(), tenantOf(c)
	card, created, err := h.meshWrite(ctx, tenant, in)
	if err != nil {
		return err
	}
	if h.Secrets != nil {
		if secret != "" {
			err = h.Secrets.Set(ctx, tenant, card.AgentID, secret, header)
		} else if err = h.Secrets.Remove(ctx, tenant, card.AgentID); errors.Is(err, fault.NotFound) {
			err = nil
		}
		if err != nil {
			if created {
				// A new card whose credential cannot be kept would be called without it.
				_ = h.Cards.Delete(context.WithoutCancel(ctx), tenant, card.AgentID, cards.Precondition{IfMatch: []int64{card.Revision}})
			}
			return err
		}
	}
	return h.meshAgent(c, http.StatusCreated, card)
}

// meshCredential reads agentkit-mesh's auth: the secret and the header it goes in ("": the
// bearer token), or no secret for none.
func meshCredential(a *api.MeshAuth) (secret, header string, err error) {
	if a == nil {
		return "", "", nil
	}
	switch a.Type {
	case "none":
		return "", "", nil
	case "bearer":
		if a.Token == "" {
			return "", "", fault.New(fault.Invalid, "auth: a bearer credential needs its token: invalid")
		}
	case "header":
		if a.Token == "" || a.HeaderName == "" {
			return "", "", fault.New(fault.Invalid, "auth: a header credential needs its token and headerName: invalid")
		}
		header = a.HeaderName
	default:
		return "", "", fault.Errorf(fault.Invalid, "auth: type %q must be bearer, header or none: invalid", a.Type)
	}
	if err := delegation.CheckCredential(a.Token, header); err != nil {
		return "", "", err
	}
	return a.Token, header, nil
}

// meshWrite creates the card of an agentkit-mesh registration, or changes the card of that name,
// on the revision it read.
func (h *handlers) meshWrite(ctx context.Context, tenant tenants.ID, in api.MeshAgentsRegister) (cards.Card, bool, error) {
	for attempt := 1; ; attempt++ {
		card, err := h.Cards.Get(ctx, tenant, in.Name)
		pre := cards.Precondition{IfMatch: []int64{card.Revision}}
		switch {
		case errors.Is(err, fault.NotFound):
			card, pre = cards.Card{AgentID: in.Name, Name: in.Name}, cards.Precondition{IfNoneMatchAny: true}
		case err != nil:
			return cards.Card{}, false, err
		}
		body, err := json.Marshal(meshCard(card, in))
		if err != nil {
			return cards.Card{}, false, err
		}
		card, created, err := h.Cards.Put(ctx, tenant, in.Name, body, pre)
		if (errors.Is(err, fault.Stale) || errors.Is(err, fault.Conflict)) && attempt < meshRegisterAttempts {
			continue // written meanwhile: read it again
		}
		return card, created, err
	}
}

// meshCard is card with what an agentkit-mesh registration says of it.
func meshCard(card cards.Card, in api.MeshAgentsRegister) cards.Card {
	card.Description, card.Endpoint = in.Description, in.Endpoint
	protocol := in.Protocol
	if protocol == "" {
		protocol = "http"
	}
	card.Protocols = append([]string{protocol}, slices.DeleteFunc(slices.Clone(card.Protocols), func(p string) bool { return p == protocol })...)
	caps := make([]cards.Capability, 0, len(in.Capabilities))
	for _, name := range in.Capabilities {
		i := slices.IndexFunc(card.Capabilities, func(c cards.Capability) bool { return c.Name == name })
		if i >= 0 {
			caps = append(caps, card.Capabilities[i])
		} else {
			caps = append(caps, cards.Capability{Name: name})
		}
	}
	card.Capabilities = caps
	card.Resources = nil
	for _, r := range in.Resources {
		card.Resources = append(card.Resources, cards.Resource{URI: r.URI, Access: r.Access})
	}
	card.Liveness = nil
	return card
}

// meshInt reads a query parameter as agentkit-mesh does: a whole number of at least 0, else def.
func meshInt(c echo.Context, name string, def int) int {
	n, err := strconv.Atoi(c.QueryParam(name))
	if err != nil || n < 0 {
		return def
	}
	return n
}

// meshResources reads the resources an agent must have access to.
func meshResources(raw string) ([]string, error) {
	if raw == "" {
		return nil, nil
	}
	var rs []api.MeshURI
	if err := json.Unmarshal([]byte(raw), &rs); err != nil {
		return nil, fault.New(fault.Invalid, "Invalid resources JSON")
	}
	return meshURIs(rs), nil
}

func meshURIs(rs []api.MeshURI) []string {
	uris := make([]string, 0, len(rs))
	for _, r := range rs {
		uris = append(uris, r.URI)
	}
	return uris
}

func (h *handlers) meshDiscover(c echo.Context) error {
	query := c.QueryParam("query")
	if query == "" {
		return fault.New(fault.Invalid, "query parameter required")
	}
	uris, err := meshResources(c.QueryParam("resources"))
	if err != nil {
		return err
	}
	limit := meshInt(c, "limit", 0)
	if limit == 0 || limit > meshListMax {
		limit = meshListMax
	}
	matches, err := h.meshFind(c.Request().Context(), tenantOf(c), query, uris, limit)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, matches)
}

// meshFind answers agentkit-mesh's discovery: the free-text search, filtered by the resources
// the agents must cover.
func (h *handlers) meshFind(ctx context.Context, tenant tenants.ID, query string, uris []string, limit int) ([]api.MeshMatch, error) {
	hits, err := h.searchAll(ctx, tenant, search.Query{Q: query, Resources: uris}, limit)
	if err != nil {
		return nil, err
	}
	list := make([]cards.Card, len(hits))
	for i, hit := range hits {
		list[i] = hit.Card
	}
	kinds, err := h.secretKinds(ctx, tenant, list)
	if err != nil {
		return nil, err
	}
	out := make([]api.MeshMatch, 0, len(hits))
	for _, hit := range hits {
		m := api.MeshMatch{Agent: meshAgentOf(hit.Card, kinds[hit.Card.AgentID]), MatchedCapabilities: hit.MatchedCapabilities,
			MatchedResources: []api.MeshResource{}}
		if m.MatchedCapabilities == nil {
			m.MatchedCapabilities = []string{}
		}
		if hit.Score != nil {
			m.Score = *hit.Score
		}
		for _, r := range hit.Card.Resources {
			if slices.Contains(hit.MatchedResources, r.URI) {
				m.MatchedResources = append(m.MatchedResources, api.MeshResource{URI: r.URI, Access: r.Access})
			}
		}
		out = append(out, m)
	}
	return out, nil
}

// covered reports whether the card's resources cover every URI asked for.
func covered(card cards.Card, uris []string) bool {
	for _, u := range uris {
		if !slices.ContainsFunc(card.Resources, func(r cards.Resource) bool { return index.Covers(r.URI, u) }) {
			return false
		}
	}
	return true
}

func (h *handlers) meshDelegate(c echo.Context) error {
	var in api.MeshDelegate
	if err := decodeBody(c, &in); err != nil {
		return err
	}
	if in.Task == "" {
		return fault.New(fault.Invalid, "task is required")
	}
	ctx, tenant := c.Request().Context(), tenantOf(c)
	uris := meshURIs(in.Resources)
	var card cards.Card
	switch {
	case in.TargetName != "":
		var err error
		card, err = h.Cards.Get(ctx, tenant, in.TargetName)
		if errors.Is(err, fault.NotFound) {
			return fault.Errorf(fault.NotFound, "Agent %q not found", in.TargetName)
		}
		if err != nil {
			return err
		}
		if !covered(card, uris) {
			return fault.Errorf(fault.Forbidden, "Agent %q does not have access to required resources", in.TargetName)
		}
	case in.Query != "":
		found, err := h.meshFind(ctx, tenant, in.Query, uris, 1)
		if err != nil {
			return err
		}
		if len(found) == 0 {
			if len(uris) > 0 {
				return fault.New(fault.NotFound, "No agent found with matching capabilities AND access to required resources")
			}
			return fault.New(fault.NotFound, "No agent found matching query")
		}
		if card, err = h.Cards.Get(ctx, tenant, found[0].Agent.Name); err != nil {
			return err
		}
	default:
		return fault.New(fault.Invalid, "targetName or query is required")
	}
	capability, ok := api.MeshCapability(card, in.Task)
	if !ok {
		return fault.Errorf(fault.Invalid, "agent %q declares no capability to delegate to: invalid", card.AgentID)
	}
	req := delegation.Request{AgentID: card.AgentID, Capability: capability, Task: in.Task, Context: in.Context,
		Mode: delegation.ModeSync, Transport: delegation.TransportHTTP}
	if in.Async {
		if h.callbackBase == "" {
			return errNoCallbacks
		}
		req.Mode = delegation.ModeAsync
	}
	d, err := h.Delegations.DelegateSent(ctx, tenant, req, h.callbackURL(tenant))
	if err != nil {
		return err
	}
	out := api.MeshDelegated{ID: d.ID, TargetAgent: d.AgentID, Status: string(d.Status), Result: d.Result, Error: d.Error,
		LatencyMS: d.LatencyMS, Success: d.Status == delegation.StatusCompleted || d.Status == delegation.StatusAccepted}
	if d.Status == delegation.StatusAccepted && len(out.Result) == 0 {
		out.Result, _ = json.Marshal(meshAccepted)
	}
	return c.JSON(http.StatusOK, out)
}

// meshDelegationOf is a record as agentkit-mesh's.
func meshDelegationOf(d delegation.Delegation) api.MeshDelegation {
	m := api.MeshDelegation{ID: d.ID, SourceAgent: d.Caller, TargetAgent: d.AgentID, Status: string(d.Status),
		CreatedAt: api.MeshTime(d.CreatedAt), UpdatedAt: api.MeshTime(d.UpdatedAt)}
	if len(d.Result) > 0 {
		m.Result = &d.Result
	}
	if d.Task != "" {
		m.Task = &d.Task
	}
	if d.Error != "" {
		m.Error = &d.Error
	}
	if d.Status != delegation.StatusPending && d.Status != delegation.StatusRunning {
		m.LatencyMS = &d.LatencyMS
	}
	return m
}

func (h *handlers) meshDelegations(c echo.Context) error {
	limit := min(meshInt(c, "limit", meshDelegationsDefault), meshDelegationsMax)
	skip := meshInt(c, "offset", 0)
	out := make([]api.MeshDelegation, 0, limit)
	ctx, tenant := c.Request().Context(), tenantOf(c)
	page := paging.Page{Limit: new(delegation.MaxLimit)}
	for len(out) < limit {
		list, next, err := h.Delegations.List(ctx, tenant, delegation.Filter{}, page)
		if err != nil {
			return err
		}
		for _, d := range list {
			if skip > 0 {
				skip--
				continue
			}
			if len(out) < limit {
				out = append(out, meshDelegationOf(d))
			}
		}
		if next == "" {
			break
		}
		page.Cursor = next
	}
	return c.JSON(http.StatusOK, out)
}

func (h *handlers) meshGetDelegation(c echo.Context) error {
	d, err := h.Delegations.Get(c.Request().Context(), tenantOf(c), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, meshDelegationOf(d))
}

// meshResult takes an agent's result for an async delegation, posted as agentkit-mesh's agents
// post it: to the control plane, with the caller's token instead of the callback's.
func (h *handlers) meshResult(c echo.Context) error {
	body, err := readBody(c, mediaJSON)
	if errors.Is(err, fault.TooLarge) {
		return fault.New(fault.TooLarge, "the result is too large: result is too large")
	}
	if err != nil {
		return err
	}
	if err := h.Delegations.CompleteAs(c.Request().Context(), tenantOf(c), c.Param("id"), body); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, api.MeshOK{OK: true})
}

// errNoCallbacks refuses an async delegation on a server that has no callback URL to give.
var errNoCallbacks = fault.New(fault.Unavailable, "async delegations are off: the server listens on a non-loopback address and "+
	"delegation.publicUrl is not set, so agents would have no callback URL; the operator must set it: service unavailable")
