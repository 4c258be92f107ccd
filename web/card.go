package web

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/search"
	"github.com/agentcards/agentcards/web/api"
)

const mediaMergePatch = "application/merge-patch+json"

// etag renders a revision as a strong entity tag.
func etag(rev int64) string { return `"` + strconv.FormatInt(rev, 10) + `"` }

// etagList reads an If-Match or If-None-Match header into its entity tags as sent ("*"
// included): the one reader of both headers.
func etagList(h string) []string {
	var tags []string
	for _, part := range strings.Split(h, ",") {
		if tag := strings.TrimSpace(part); tag != "" {
			tags = append(tags, tag)
		}
	}
	return tags
}

// parseETags reads an If-Match list for its revisions (strong comparison: a weak tag never
// matches). It reports "*" separately, and whether any listed tag could not be one of ours (such
// a tag simply never matches).
func parseETags(h string) (revs []int64, any, foreign bool) {
	for _, tag := range etagList(h) {
		if tag == "*" {
			any = true
			continue
		}
		rev, err := strconv.ParseInt(strings.Trim(tag, `"`), 10, 64)
		if err != nil || strings.HasPrefix(tag, "W/") {
			foreign = true
			continue
		}
		revs = append(revs, rev)
	}
	return revs, any, foreign
}

// notModified reports whether the request's If-None-Match is "*" or names tag, by the weak
// comparison RFC 9110 §13.1.2 asks for (a W/ prefix on either side is ignored): the answer to a
// GET or HEAD is then 304.
func notModified(c echo.Context, tag string) bool {
	tag = strings.TrimPrefix(tag, "W/")
	for _, t := range etagList(c.Request().Header.Get("If-None-Match")) {
		if t == "*" || strings.TrimPrefix(t, "W/") == tag {
			return true
		}
	}
	return false
}

// precondition reads the conditional headers of a write.
func precondition(c echo.Context) cards.Precondition {
	var p cards.Precondition
	if h := c.Request().Header.Get("If-Match"); h != "" {
		var foreign bool
		p.IfMatch, p.IfMatchAny, foreign = parseETags(h)
		p.IfMatchNone = foreign && len(p.IfMatch) == 0 && !p.IfMatchAny
	}
	p.IfNoneMatchAny = slices.Contains(etagList(c.Request().Header.Get("If-None-Match")), "*")
	return p
}

func cardLocation(c echo.Context, card cards.Card) string {
	return fmt.Sprintf("/v1/tenants/%s/cards/%s", url.PathEscape(c.Param("tenant")), url.PathEscape(card.AgentID))
}

func writeCard(c echo.Context, status int, card cards.Card) error {
	c.Response().Header().Set("ETag", etag(card.Revision))
	// As c.JSON writes it (a line), by the card's own encoder, which is faster.
	b, err := cards.Marshal(card)
	if err != nil {
		return err
	}
	return c.JSONBlob(status, append(b, '\n'))
}

// registerBatch creates up to cards.MaxBatch cards from a JSON array, all or none.
func (h *handlers) registerBatch(c echo.Context) error {
	body := batchBodies.Get().(*bytes.Buffer)
	defer func() {
		if body.Cap() <= maxPooledBatch {
			batchBodies.Put(body) // emptied by its next read
		}
	}()
	if err := readBodyInto(c, body, mediaJSON); err != nil {
		return err
	}
	list, err := h.Cards.RegisterBatch(c.Request().Context(), tenantOf(c), body.Bytes())
	if err != nil {
		return err
	}
	// {"items": [...], "total": n} as c.JSON writes it, each card as Marshal encodes it, from the
	// document stored.
	answer := batchAnswers.Get().(*[]byte)
	defer func() {
		if cap(*answer) <= maxPooledBatch {
			batchAnswers.Put(answer)
		}
	}()
	b := append((*answer)[:0], `{"items":[`...)
	for i, p := range list {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = cards.AppendMarshal(b, p.Card, p.Document); err != nil {
			return err
		}
	}
	b = append(append(b, `],"total":`...), strconv.Itoa(len(list))...)
	b = append(b, "}\n"...)
	*answer = b
	return c.JSONBlob(http.StatusCreated, b)
}

// batchBodies and batchAnswers hold the buffers of batch registrations' bodies and answers, a
// few hundred kB each for 200 cards, for the next batch. Read with io.ReadAll and built anew,
// they would be most of the bytes the server allocates while clients register batches, and the
// collector's work grows with them. Neither
// outlives its request: the cards decoded from a body copy what they hold of it, and an answer
// is written before its handler returns.
var (
	batchBodies  = sync.Pool{New: func() any { return new(bytes.Buffer) }}
	batchAnswers = sync.Pool{New: func() any { return new([]byte) }}
)

// maxPooledBatch is the largest buffer kept for the next batch: twice the default body limit,
// so that a server configured for larger bodies keeps no such buffer idle.
const maxPooledBatch = 2 << 20

func (h *handlers) registerCard(c echo.Context) error {
	body, err := readObject(c, mediaJSON)
	if err != nil {
		return err
	}
	card, err := h.Cards.Register(c.Request().Context(), tenantOf(c), body)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, cardLocation(c, card))
	return writeCard(c, http.StatusCreated, card)
}

func (h *handlers) putCard(c echo.Context) error {
	body, err := readObject(c, mediaJSON)
	if err != nil {
		return err
	}
	card, created, err := h.Cards.Put(c.Request().Context(), tenantOf(c), c.Param("agentId"), body, precondition(c))
	if err != nil {
		return err
	}
	if created {
		c.Response().Header().Set(echo.HeaderLocation, cardLocation(c, card))
		return writeCard(c, http.StatusCreated, card)
	}
	return writeCard(c, http.StatusOK, card)
}

func (h *handlers) patchCard(c echo.Context) error {
	body, err := readObject(c, mediaMergePatch, mediaJSON)
	if err != nil {
		return err
	}
	card, err := h.Cards.Patch(c.Request().Context(), tenantOf(c), c.Param("agentId"), body, precondition(c))
	if err != nil {
		return err
	}
	return writeCard(c, http.StatusOK, card)
}

func (h *handlers) getCard(c echo.Context) error {
	card, err := h.Cards.Get(c.Request().Context(), tenantOf(c), c.Param("agentId"))
	if err != nil {
		return err
	}
	if notModified(c, etag(card.Revision)) {
		c.Response().Header().Set("ETag", etag(card.Revision))
		return c.NoContent(http.StatusNotModified)
	}
	return writeCard(c, http.StatusOK, card)
}

// heartbeat records that the card's agent is alive: POST .../cards/{agentId}/heartbeat, no body.
func (h *handlers) heartbeat(c echo.Context) error {
	l, err := h.Cards.Heartbeat(c.Request().Context(), tenantOf(c), c.Param("agentId"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, l)
}

func (h *handlers) deleteCard(c echo.Context) error {
	if err := h.Cards.Delete(c.Request().Context(), tenantOf(c), c.Param("agentId"), precondition(c)); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// searchRoutes serves cards.search on both its routes: GET with query parameters, POST with a
// body.
func (h *handlers) searchRoutes(c echo.Context) error {
	if c.Request().Method == http.MethodPost {
		return h.searchCards(c)
	}
	return h.listCards(c)
}

// searchParams maps the query parameters of GET .../cards to the fields they fill.
var searchParams = map[string]func(q *search.Query, values []string) error{
	"protocol":   func(q *search.Query, v []string) error { q.Protocols = v; return nil },
	"capability": func(q *search.Query, v []string) error { q.Capabilities = v; return nil },
	"tag":        func(q *search.Query, v []string) error { q.Tags = v; return nil },
	"resource":   func(q *search.Query, v []string) error { q.Resources = v; return nil },
	"status":     func(q *search.Query, v []string) error { q.Status = v; return nil },
	"verified":   func(q *search.Query, v []string) error { return boolParam("verified", v, &q.Verified) },
	"trusted":    func(q *search.Query, v []string) error { return boolParam("trusted", v, &q.Trusted) },
	"online":     func(q *search.Query, v []string) error { return boolParam("online", v, &q.Online) },
	"name":       func(q *search.Query, v []string) error { return single("name", v, &q.Name) },
	"q":          func(q *search.Query, v []string) error { return single("q", v, &q.Q) },
	"explain": func(q *search.Query, v []string) error {
		var b *bool
		err := boolParam("explain", v, &b)
		q.Explain = b != nil && *b
		return err
	},
	// limit and cursor are the page's, read by pageQuery; listed so that the route takes them.
	"limit":  nil,
	"cursor": nil,
}

// boolParam reads a parameter given at most once as true or false.
func boolParam(name string, values []string, dst **bool) error {
	var s string
	if err := single(name, values, &s); err != nil {
		return err
	}
	b, err := strconv.ParseBool(s)
	if err != nil || (s != "true" && s != "false") {
		return fault.Errorf(fault.Invalid, "%s: %q must be true or false: invalid request", name, s)
	}
	*dst = &b
	return nil
}

// singleValued refuses a query that gives any parameter more than once (as single does).
func singleValued(q url.Values) error {
	for name, values := range q {
		if len(values) > 1 {
			var v string
			return single(name, values, &v)
		}
	}
	return nil
}

func single(name string, values []string, dst *string) error {
	if len(values) > 1 {
		return fault.Errorf(fault.Invalid, "%s: given %d times, at most once: invalid request", name, len(values))
	}
	*dst = values[0]
	return nil
}

// listCards is the search over query parameters: GET .../cards?protocol=&capability=&tag=&...
// The route takes exactly the parameters of searchParams (others are refused before this runs).
func (h *handlers) listCards(c echo.Context) error {
	params := c.QueryParams()
	page, err := pageQuery(params)
	if err != nil {
		return err
	}
	q := search.Query{Page: page}
	for name, set := range searchParams {
		if values, ok := params[name]; ok && set != nil {
			if err := set(&q, values); err != nil {
				return err
			}
		}
	}
	return h.search(c, q)
}

// searchCards is the same search with a JSON body: POST .../cards/search.
func (h *handlers) searchCards(c echo.Context) error {
	var q search.Query
	if err := decodeBody(c, &q); err != nil {
		return err
	}
	return h.search(c, q)
}

// answerBuffers recycles the buffers search answers are written into: an answer of ten cards is
// tens of kilobytes, and allocating it afresh each time shows up as garbage collection.
var answerBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 32<<10); return &b }}

func (h *handlers) search(c echo.Context, q search.Query) error {
	var load search.Load
	res, err := h.Search.Search(search.WithLoad(c.Request().Context(), &load), tenantOf(c), q)
	if err != nil {
		return err
	}
	if load.Took > 0 {
		// The search waited for its tenant's index to be read back or built: the answer says
		// how long (in milliseconds, as Server-Timing has it) and which.
		from := "cards"
		if load.Snapshot {
			from = "snapshot"
		}
		c.Response().Header().Set("Server-Timing", "index-load;dur="+strconv.FormatFloat(float64(load.Took.Microseconds())/1000, 'f', 1, 64)+`;desc="`+from+`"`)
	}
	buf := answerBuffers.Get().(*[]byte)
	defer func() {
		if cap(*buf) <= 1<<20 { // a rare huge answer is not kept
			answerBuffers.Put(buf)
		}
	}()
	body, err := appendResult((*buf)[:0], res)
	if err != nil {
		return err
	}
	*buf = body // keep the grown buffer for the next answer
	if c.Request().Header.Get(api.WantSignatureHeader) != "" {
		// A follower checks its listing as it checks the change feed's pages.
		if err := h.signBody(c, tenantOf(c), body); err != nil {
			return err
		}
	}
	return writeLarge(c, http.StatusOK, body)
}
