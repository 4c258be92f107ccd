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

// HeaderA2ACardVersion says which A2A versions a served card is read as: "1.0", "0.3", or
// "1.0, 0.3" for the hybrid default card. A2A names no response header for it, and a client
// whose A2A-Version the agent lacks gets the default card: this tells it so before it parses.
const HeaderA2ACardVersion = "A2A-Card-Version"

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

// a2aQueryVersion reads ?version=, the explicit choice of a form: "" when absent, else the form,
// which is served as asked or refused (a2a.Render). A value other than 1.0 and 0.3 is a 400.
func a2aQueryVersion(c echo.Context) (string, error) {
	q := c.QueryParam("version")
	if q == "" {
		return "", nil
	}
	v, ok := a2aVersions[q]
	if !ok {
		return "", fault.Errorf(fault.Invalid, "A2A version %q is not served; this service serves 1.0 and 0.3: invalid request", q)
	}
	return v, nil
}

// a2aForm is the form of card to serve: the one ?version= names, else the one the A2A-Version
// header prefers (a2a.Preferred). Client libraries send the header with every request, so it
// never refuses a card: a version the agent lacks gets the default card, as a value that names
// no version (not major.minor) does.
func a2aForm(c echo.Context, card cards.Card, explicit string) string {
	if explicit != "" {
		return explicit
	}
	v, ok := cards.A2AVersion(c.Request().Header.Get(headerA2AVersion))
	if !ok {
		return a2a.VersionDefault
	}
	return a2a.Preferred(card, v)
}

// a2aCard serves an agent's A2A card, signed with the service key, with ETag and Cache-Control:
// the form a2aForm picks (a2a.Render), and the versions it is read as in HeaderA2ACardVersion.
func (h *handlers) a2aCard(c echo.Context) error {
	explicit, err := a2aQueryVersion(c)
	if err != nil {
		return err
	}
	card, err := h.A2A.GetA2A(c.Request().Context(), tenantOf(c), c.Param("agentId"))
	if err != nil {
		return err
	}
	version := a2aForm(c, card, explicit)
	form, err := a2a.Render(card, version)
	if err != nil {
		return err
	}
	unsigned, err := json.Marshal(form)
	if err != nil {
		return err
	}
	// The publisher's own signatures go with ours when this form is what the publisher signed.
	publisher, err := a2a.PublisherSignatures(card, unsigned)
	if err != nil {
		return err
	}
	var signer a2a.CardSigner
	kid := ""
	if h.ServiceKeys != nil {
		signer, kid = h.ServiceKeys, h.ServiceKeys.Current().ID
	}
	body, err := a2a.SignCard(signer, form, publisher...)
	if err != nil {
		return err
	}
	// The tag covers the form served, what is signed, the key that signs it and the publisher's
	// signatures: ECDSA signatures differ on every request, the card they sign does not. The same
	// form has the same tag however it was chosen (?version=, A2A-Version, a version the agent
	// lacks, none).
	h256 := sha256.New()
	for _, part := range append([]json.RawMessage{[]byte(version), []byte(kid), unsigned}, publisher...) {
		h256.Write(part)
		h256.Write([]byte{0})
	}
	sum := h256.Sum(nil)
	tag := `"` + hex.EncodeToString(sum[:16]) + `"`
	hdr := c.Response().Header()
	hdr.Set("ETag", tag)
	scope := "private"
	if card.Visibility == cards.VisibilityPublic {
		scope = "public"
	}
	hdr.Set(echo.HeaderCacheControl, scope+", max-age="+strconv.Itoa(int(h.a2aMaxAge.Seconds())))
	hdr.Set(echo.HeaderVary, headerA2AVersion+", Authorization")
	hdr.Set(HeaderA2ACardVersion, strings.Join(a2a.FormVersions(card, version), ", "))
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
