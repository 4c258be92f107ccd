package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/labstack/echo/v4"

	"github.com/agentcards/agentcards/authz"
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

// secretKinds says how each card's calls carry their credential; none without endpoint secrets.
// A read answered from memory while the database is down (a search) says none rather than fail.
func (h *handlers) secretKinds(ctx context.Context, tenant tenants.ID, cs []cards.Card) (map[string]string, error) {
	if h.Secrets == nil {
		return nil, nil
	}
	kinds, err := h.Secrets.Kinds(ctx, tenant, cs)
	if err != nil && tenants.Stale(ctx) {
		return nil, nil
	}
	return kinds, err
}

func (h *handlers) meshAgents(c echo.Context) error {
	ctx, tenant := c.Request().Context(), tenantOf(c)
	// Every agent, as agentkit-mesh lists them: disabled cards too.
	q := search.Query{Status: []string{string(cards.StatusActive), string(cards.StatusDeprecated), string(cards.StatusDisabled)}}
	hits, err := h.searchAll(ctx, tenant, q, meshListMax)
	if err != nil {
		return err
	}
	list := cardsOf(hits)
	kinds, err := h.secretKinds(ctx, tenant, list)
	if err != nil {
		return err
	}
	out := make([]api.MeshAgent, len(list))
	for i, card := range list {
		out[i] = api.MeshAgentOf(card, kinds[card.AgentID])
	}
	return c.JSON(http.StatusOK, out)
}

// cardsOf are the hits' cards.
func cardsOf(hits []search.Hit) []cards.Card {
	list := make([]cards.Card, len(hits))
	for i, hit := range hits {
		list[i] = hit.Card
	}
	return list
}

// searchAll answers the search's hits page after page, up to max (at least 1) of them.
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
	return c.JSON(status, api.MeshAgentOf(card, kinds[card.AgentID]))
}

// meshSays gives err agentkit-mesh's message for its kind, when it is of that kind.
func meshSays(err error, kind fault.Kind, msg string) error {
	if errors.Is(err, kind) {
		return fault.Wrap(err, kind, "%s", msg)
	}
	return err
}

func (h *handlers) meshGetAgent(c echo.Context) error {
	card, err := h.Cards.Get(c.Request().Context(), tenantOf(c), c.Param("name"))
	if err != nil {
		return meshSays(err, fault.NotFound, "not found")
	}
	return h.meshAgent(c, http.StatusOK, card)
}

func (h *handlers) meshRemoveAgent(c echo.Context) error {
	if err := h.Cards.Delete(c.Request().Context(), tenantOf(c), c.Param("name"), cards.Precondition{}); err != nil {
		return meshSays(err, fault.NotFound, "not found")
	}
	return c.JSON(http.StatusOK, api.MeshOK{OK: true})
}

func (h *handlers) meshHeartbeat(c echo.Context) error {
	if _, err := h.Cards.Heartbeat(c.Request().Context(), tenantOf(c), c.Param("name")); err != nil {
		return meshSays(err, fault.NotFound, "not found")
	}
	return c.JSON(http.StatusOK, api.MeshOK{OK: true})
}

// meshBody decodes a body as agentkit-mesh reads one: JSON whatever its Content-Type says, an
// object, its members those of v (strictly: a member v has not is refused, naming it).
func meshBody(c echo.Context, v any) error {
	body, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return bodyError(c, err)
	}
	if b := bytes.TrimLeft(body, " \t\r\n"); len(b) == 0 || b[0] != '{' {
		return fault.New(fault.Malformed, "Invalid JSON body")
	}
	return meshSays(cards.DecodeStrict(body, v), fault.Malformed, "Invalid JSON body")
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
	if err := meshBody(c, &in); err != nil {
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
	card, before, err := h.meshWrite(ctx, tenant, in)
	if err != nil {
		return err
	}
	if h.Secrets != nil {
		if secret != "" {
			err = h.Secrets.SetFor(ctx, tenant, card.AgentID, card.Endpoint, secret, header)
		} else if err = h.Secrets.Remove(ctx, tenant, card.AgentID); errors.Is(err, fault.NotFound) {
			err = nil
		}
		if err != nil {
			h.meshUndo(ctx, tenant, card, before)
			return err
		}
	}
	return h.meshAgent(c, http.StatusCreated, card)
}

// meshUndo takes back the card write of a registration whose credential could not be kept, so
// that the registration changes nothing: the card created is removed, the card changed is put
// back as it was (unless written again meanwhile). What cannot be taken back is logged.
func (h *handlers) meshUndo(ctx context.Context, tenant tenants.ID, card cards.Card, before *cards.Card) {
	ctx = context.WithoutCancel(ctx)
	pre := cards.Precondition{IfMatch: []int64{card.Revision}}
	var err error
	if before == nil {
		err = h.Cards.Delete(ctx, tenant, card.AgentID, pre)
	} else {
		var body []byte
		if body, err = json.Marshal(before); err == nil {
			_, _, err = h.Cards.Put(ctx, tenant, card.AgentID, body, pre)
		}
	}
	if err != nil {
		h.log.Warn("agentkit-mesh registration: the card write could not be taken back after its credential failed",
			"tenant", string(tenant), "agentId", card.AgentID, "err", err)
	}
}

// meshCredential reads agentkit-mesh's auth as its calls used it: a bearer token, or a token in
// the header headerName names; anything else (none, or a credential missing its token or its
// header) sends nothing, so it is no secret.
func meshCredential(a *api.MeshAuth) (secret, header string, err error) {
	switch {
	case a == nil || a.Token == "":
		return "", "", nil
	case a.Type == "bearer":
	case a.Type == "header" && a.HeaderName != "":
		header = a.HeaderName
	default:
		return "", "", nil
	}
	if err := delegation.CheckCredential(a.Token, header); err != nil {
		return "", "", err
	}
	return a.Token, header, nil
}

// meshWrite creates the card of an agentkit-mesh registration, or changes the card of that name,
// on the revision it read; it returns the card written, and the card as it was (nil: created).
func (h *handlers) meshWrite(ctx context.Context, tenant tenants.ID, in api.MeshAgentsRegister) (cards.Card, *cards.Card, error) {
	for attempt := 1; ; attempt++ {
		card, err := h.Cards.Get(ctx, tenant, in.Name)
		var before *cards.Card
		pre := cards.Precondition{IfMatch: []int64{card.Revision}}
		switch {
		case errors.Is(err, fault.NotFound):
			card, pre = cards.Card{AgentID: in.Name, Name: in.Name}, cards.Precondition{IfNoneMatchAny: true}
		case err != nil:
			return cards.Card{}, nil, err
		default:
			was := card
			before = &was
		}
		body, err := json.Marshal(meshCard(card, in))
		if err != nil {
			return cards.Card{}, nil, err
		}
		written, _, err := h.Cards.Put(ctx, tenant, in.Name, body, pre)
		if (errors.Is(err, fault.Stale) || errors.Is(err, fault.Conflict)) && attempt < meshRegisterAttempts {
			continue // written meanwhile: read it again
		}
		return written, before, err
	}
}

// meshCard is card with what an agentkit-mesh registration says of it.
func meshCard(card cards.Card, in api.MeshAgentsRegister) cards.Card {
	card.Description, card.Endpoint = in.Description, in.Endpoint
	protocol := strings.ToLower(in.Protocol)
	if protocol == "" {
		protocol = "http"
	}
	card.Protocols = append([]string{protocol}, slices.DeleteFunc(slices.Clone(card.Protocols), func(p string) bool { return p == protocol })...)
	caps := make([]cards.Capability, 0, len(in.Capabilities))
	for _, name := range in.Capabilities {
		if slices.ContainsFunc(caps, func(c cards.Capability) bool { return c.Name == name }) {
			continue // agentkit-mesh kept a name twice; a card has each once
		}
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

// meshInt reads a query parameter as agentkit-mesh does (JavaScript's parseInt): the whole
// number its text starts with, after spaces and a sign; def when there is none or it is negative.
func meshInt(c echo.Context, name string, def int) int {
	v := strings.TrimLeft(c.QueryParam(name), " \t\n\r\v\f")
	neg := strings.HasPrefix(v, "-")
	v = strings.TrimLeft(v, "+-")
	end := strings.IndexFunc(v, func(r rune) bool { return r < '0' || r > '9' })
	if end < 0 {
		end = len(v)
	}
	n, err := strconv.Atoi(v[:end])
	switch {
	case end == 0 || neg && n > 0:
		return def
	case err != nil: // more digits than an int holds
		return math.MaxInt
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
	if !hasWord(query) {
		// agentkit-mesh finds nothing for a query with no word, where the search refuses it.
		return c.JSON(http.StatusOK, []api.MeshMatch{})
	}
	limit := meshInt(c, "limit", 0)
	if limit == 0 || limit > meshListMax {
		limit = meshListMax
	}
	matches, err := h.meshFind(c.Request().Context(), tenantOf(c), query, uris, limit, true)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, matches)
}

// hasWord reports whether s holds a letter or a digit: a word to search for.
func hasWord(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0
}

// meshFind answers agentkit-mesh's discovery: the free-text search, filtered by the resources
// the agents must cover; with kinds, each agent says how its calls carry their credential.
func (h *handlers) meshFind(ctx context.Context, tenant tenants.ID, query string, uris []string, limit int, kinds bool) ([]api.MeshMatch, error) {
	hits, err := h.searchAll(ctx, tenant, search.Query{Q: query, Resources: uris}, limit)
	if err != nil {
		return nil, err
	}
	var secretKinds map[string]string
	if kinds {
		if secretKinds, err = h.secretKinds(ctx, tenant, cardsOf(hits)); err != nil {
			return nil, err
		}
	}
	out := make([]api.MeshMatch, 0, len(hits))
	for _, hit := range hits {
		m := api.MeshMatch{Agent: api.MeshAgentOf(hit.Card, secretKinds[hit.Card.AgentID]), MatchedCapabilities: hit.MatchedCapabilities,
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
	if err := meshBody(c, &in); err != nil {
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
		var found []api.MeshMatch
		var err error
		if hasWord(in.Query) {
			if found, err = h.meshFind(ctx, tenant, in.Query, uris, 1, false); err != nil {
				return err
			}
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
	req := delegation.Request{AgentID: card.AgentID, Capability: capability, Task: in.Task, Context: meshContext(ctx, in.Context),
		Mode: delegation.ModeSync, Transport: delegation.TransportHTTP, TimeoutMS: meshSyncTimeout.Milliseconds()}
	if in.Async {
		if h.callbackBase == "" {
			return errNoCallbacks
		}
		// agentkit-mesh takes a result whenever it comes: here, until the longest timeout the
		// server allows an async delegation (delegation.maxAsyncTimeout).
		req.Mode, req.TimeoutMS = delegation.ModeAsync, math.MaxInt64
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

// meshSyncTimeout is how long agentkit-mesh waits for an agent's answer (at most
// delegation.maxTimeout here).
const meshSyncTimeout = 2 * time.Minute

// meshContext is the context agentkit-mesh sends an agent: the caller's, an object, with the
// delegation's depth in the chain as its depth member (the one the dispatcher counts from the
// caller's token); a context that is not an object goes as it is.
func meshContext(ctx context.Context, raw json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if len(raw) > 0 && json.Unmarshal(raw, &m) != nil {
		return raw
	}
	if m == nil { // none, or null
		m = map[string]json.RawMessage{}
	}
	p, _ := authz.PrincipalFrom(ctx)
	m["depth"] = json.RawMessage(strconv.Itoa(p.Depth + 1))
	out, err := json.Marshal(m)
	if err != nil {
		return raw
	}
	return out
}

// meshDelegationOf is a record as agentkit-mesh's.
func meshDelegationOf(d delegation.Delegation) api.MeshDelegation {
	m := api.MeshDelegation{ID: d.ID, SourceAgent: d.Caller, TargetAgent: d.AgentID, Status: string(d.Status),
		CreatedAt: api.MeshTime(d.CreatedAt), UpdatedAt: api.MeshTime(d.UpdatedAt)}
	if d.Imported == "agentkit-mesh" {
		// A record moved from agentkit-mesh answers its own source_agent again.
		m.SourceAgent = strings.TrimPrefix(d.Caller, delegation.ImportCaller+"/")
	}
	if len(d.Result) > 0 {
		m.Result = &d.Result
	} else if d.Status == delegation.StatusAccepted {
		accepted := json.RawMessage(strconv.Quote(meshAccepted))
		m.Result = &accepted
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

// meshOffsetMax bounds the records GET /v1/delegations skips: each is read to be skipped.
const meshOffsetMax = 10000

func (h *handlers) meshDelegations(c echo.Context) error {
	limit := min(meshInt(c, "limit", meshDelegationsDefault), meshDelegationsMax)
	skip := meshInt(c, "offset", 0)
	out := make([]api.MeshDelegation, 0, limit)
	if skip > meshOffsetMax {
		return c.JSON(http.StatusOK, out)
	}
	ctx, tenant := c.Request().Context(), tenantOf(c)
	var page paging.Page
	for len(out) < limit {
		page.Limit = new(min(delegation.MaxLimit, skip+limit-len(out)))
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
		return meshSays(err, fault.NotFound, "not found")
	}
	return c.JSON(http.StatusOK, meshDelegationOf(d))
}

// meshResult takes an agent's result for an async delegation, posted as agentkit-mesh's agents
// post it: to the control plane, with the caller's token instead of the callback's.
func (h *handlers) meshResult(c echo.Context) error {
	body, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return bodyError(c, err)
	}
	err = h.Delegations.CompleteAs(c.Request().Context(), tenantOf(c), c.Param("id"), body)
	if err != nil {
		return meshSays(meshSays(err, fault.NotFound, "Delegation not found"), fault.Conflict, "Delegation already finalized")
	}
	return c.JSON(http.StatusOK, api.MeshOK{OK: true})
}

// errNoCallbacks refuses an async delegation on a server that has no callback URL to give.
var errNoCallbacks = fault.New(fault.Unavailable, "async delegations are off: the server listens on a non-loopback address and "+
	"delegation.publicUrl is not set, so agents would have no callback URL; the operator must set it: service unavailable")
