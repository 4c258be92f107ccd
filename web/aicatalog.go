package web

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/agentcards/agentcards/cards/a2a"
	"github.com/agentcards/agentcards/cards/aicatalog"
	"github.com/agentcards/agentcards/tenants"
	"github.com/agentcards/agentcards/web/catalog"
)

// a2aCatalog serves a page of the tenant's public cards as an AI Catalog document
// (a2a.Service.Catalog), as application/ai-catalog+json. Its URLs are on the server's base URL
// (Config.BaseURL), never on the request's Host, which the caller chooses and the signatures
// would vouch for; a server without one names paths. The document is signed inside, as the draft
// signs a catalog (aicatalog.Sign), and its exact bytes in api.SignatureHeader, as the change
// feed's pages are. Cached as the agent list is, with an ETag and If-None-Match.
func (h *handlers) a2aCatalog(c echo.Context) error {
	asked, err := pageQuery(c.QueryParams())
	if err != nil {
		return err
	}
	tenant := tenantOf(c)
	page, err := h.A2A.Catalog(c.Request().Context(), tenant, asked)
	if err != nil {
		return err
	}
	doc := h.aiCatalog(tenant, page, asked.Limit)
	unsigned, err := aicatalog.Marshal(doc)
	if err != nil {
		return err
	}
	// The tag covers the document and the key that signs it, not the signatures: ECDSA
	// signatures and their issuedAt differ on every request, the document they sign does not.
	kid := ""
	if h.ServiceKeys != nil {
		kid = h.ServiceKeys.Current().ID
	}
	sum := sha256.Sum256(append(append([]byte(kid), 0), unsigned...))
	// Weak: the bytes differ between answers (the signature, issuedAt), the document does not.
	tag := `W/"` + hex.EncodeToString(sum[:16]) + `"`
	hdr := c.Response().Header()
	hdr.Set("ETag", tag)
	hdr.Set(echo.HeaderCacheControl, "public, max-age="+strconv.Itoa(int(h.a2aMaxAge.Seconds())))
	if notModified(c, tag) {
		return c.NoContent(http.StatusNotModified)
	}
	// Signed inside only where the signer can be named by an absolute URL, as the draft asks: a
	// server without a base URL signs the bytes alone (api.SignatureHeader).
	if h.ServiceKeys != nil && h.callbackBase != "" {
		if err := aicatalog.Sign(h.ServiceKeys, &doc, h.callbackBase+catalog.JWKSPath, time.Now()); err != nil {
			return err
		}
	}
	body, err := aicatalog.Marshal(doc)
	if err != nil {
		return err
	}
	if err := h.signBody(c, tenant, body); err != nil {
		return err
	}
	return writeLargeAs(c, http.StatusOK, aicatalog.MediaType, body)
}

// aiCatalog is the unsigned document of a page of the tenant's catalog: an entry per card, then,
// when more cards remain, a nested catalog whose URL is the next page's, of the same limit.
func (h *handlers) aiCatalog(tenant tenants.ID, page a2a.CatalogPage, limit *int) aicatalog.Catalog {
	base := h.callbackBase
	doc := aicatalog.Catalog{
		SpecVersion: aicatalog.SpecVersion,
		Host:        aicatalog.HostInfo{DisplayName: string(tenant), Identifier: base + aiCatalogPath(tenant)},
		Entries:     make([]aicatalog.CatalogEntry, 0, len(page.Cards)+1),
	}
	for _, card := range page.Cards {
		doc.Entries = append(doc.Entries, aicatalog.CardEntry(tenant, card, base+a2aCardPath(tenant, card.AgentID)))
	}
	if page.NextCursor != "" {
		q := url.Values{"cursor": {page.NextCursor}}
		if limit != nil {
			q.Set("limit", strconv.Itoa(*limit))
		}
		doc.Entries = append(doc.Entries, aicatalog.NextEntry(tenant, page.NextCursor, base+aiCatalogPath(tenant)+"?"+q.Encode()))
	}
	return doc
}

// aiCatalogPath is where the tenant's AI Catalog is served.
func aiCatalogPath(tenant tenants.ID) string {
	return "/a2a/" + string(tenant) + "/.well-known/ai-catalog.json"
}
