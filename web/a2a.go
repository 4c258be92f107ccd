package web

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/authz/token"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/a2a"
	"github.com/agentcards/agentcards/tenants"
)

// headerA2AVersion is the request header an A2A client names the protocol version with.
const headerA2AVersion = "A2A-Version"

// a2aVersions maps the accepted version values to the form served.
var a2aVersions = map[string]string{"1.0": a2a.Version10, "0.3": a2a.Version03}

// optionalAuth puts the token's principal in the context when the request carries one; without
// one the request goes on anonymous. A token that is present but invalid is still a 401.
func optionalAuth(tokens *token.Tokens, delegationTokens tokenVerifier, log *slog.Logger) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if c.Request().Header.Get(echo.HeaderAuthorization) == "" {
				return next(c)
			}
			return authenticate(tokens, delegationTokens, log)(next)(c)
		}
	}
}

// a2aVersion reads the version asked for by ?version= or the A2A-Version header;
// a2a.VersionDefault when neither names one.
func a2aVersion(c echo.Context) (string, error) {
	q, hdr := c.QueryParam("version"), strings.TrimSpace(c.Request().Header.Get(headerA2AVersion))
	if q != "" && hdr != "" && q != hdr {
		return "", fault.Errorf(fault.Invalid, "?version=%s and %s: %s disagree: invalid request", q, headerA2AVersion, hdr)
	}
	asked := q
	if asked == "" {
		asked = hdr
	}
	if asked == "" {
		return a2a.VersionDefault, nil
	}
	v, ok := a2aVersions[asked]
	if !ok {
		return "", fault.Errorf(fault.Invalid, "A2A version %q is not served; this service serves 1.0 and 0.3: invalid request", asked)
	}
	return v, nil
}

// a2aCard serves an agent's A2A card, signed with the service key, with ETag and Cache-Control:
// the form of the version asked for, or the default card (a2a.Render).
func (h *handlers) a2aCard(c echo.Context) error {
	version, err := a2aVersion(c)
	if err != nil {
		return err
	}
	card, err := h.A2A.GetA2A(c.Request().Context(), tenantOf(c), c.Param("agentId"))
	if err != nil {
		return err
	}
	form, err := a2a.Render(card, version)
	if err != nil {
		return err
	}
	unsigned, err := json.Marshal(form)
	if err != nil {
		return err
	}
	body := unsigned
	kid := ""
	if h.ServiceKeys != nil {
		kid = h.ServiceKeys.Current().ID
		if body, err = a2a.SignCard(h.ServiceKeys, form); err != nil {
			return err
		}
	}
	// The tag covers what is signed and the key that signs it: ECDSA signatures differ on every
	// request, the card they sign does not.
	sum := sha256.Sum256([]byte(version + "\x00" + kid + "\x00" + string(unsigned)))
	tag := `"` + hex.EncodeToString(sum[:16]) + `"`
	hdr := c.Response().Header()
	hdr.Set("ETag", tag)
	scope := "private"
	if card.Visibility == cards.VisibilityPublic {
		scope = "public"
	}
	hdr.Set(echo.HeaderCacheControl, scope+", max-age="+strconv.Itoa(int(h.a2aMaxAge.Seconds())))
	hdr.Set(echo.HeaderVary, headerA2AVersion+", Authorization")
	if notModified(c, tag) {
		return c.NoContent(http.StatusNotModified)
	}
	return writeLarge(c, http.StatusOK, body)
}

// a2aAgents lists the tenant's public agents with the URLs of their A2A cards.
func (h *handlers) a2aAgents(c echo.Context) error {
	asked, err := pageQuery(c.QueryParams())
	if err != nil {
		return err
	}
	page, err := h.A2A.PublicAgents(c.Request().Context(), tenantOf(c), asked)
	if err != nil {
		return err
	}
	for i := range page.Items {
		page.Items[i].CardURL = a2aCardPath(tenantOf(c), page.Items[i].AgentID)
	}
	c.Response().Header().Set(echo.HeaderCacheControl, "public, max-age="+strconv.Itoa(int(h.a2aMaxAge.Seconds())))
	return c.JSON(http.StatusOK, page)
}

// refreshCard fetches a card's A2A card again from where it was imported: POST
// .../cards/{agentId}/refresh, with an optional body {"keys": JWKS}.
func (h *handlers) refreshCard(c echo.Context) error {
	var body []byte
	if c.Request().ContentLength != 0 || c.Request().Header.Get(echo.HeaderContentType) != "" {
		var err error
		if body, err = readObject(c, mediaJSON); err != nil {
			return err
		}
	}
	r, err := h.A2A.Refresh(c.Request().Context(), tenantOf(c), c.Param("agentId"), body)
	if err != nil {
		return err
	}
	c.Response().Header().Set("ETag", etag(r.Card.Revision))
	return c.JSON(http.StatusOK, r)
}

// importCard creates a card from an A2A card, sent inline or fetched by URL.
func (h *handlers) importCard(c echo.Context) error {
	body, err := readObject(c, mediaJSON)
	if err != nil {
		return err
	}
	card, err := h.A2A.Import(c.Request().Context(), tenantOf(c), body)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, cardLocation(c, card))
	return writeCard(c, http.StatusCreated, card)
}

// a2aCardPath is where the A2A card of an agent is served.
func a2aCardPath(tenant tenants.ID, agentID string) string {
	return "/a2a/" + string(tenant) + "/" + agentID + "/.well-known/agent-card.json"
}
