package webhooks

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/search"
)

// SignatureHeader carries a delivery's signature: a JWS with a detached payload (RFC 7515
// appendix F), "<protected header>..<signature>", over the exact bytes of the body, by the key
// the service publishes at /.well-known/jwks.json ("kid" in the header names it).
const SignatureHeader = "Agentcards-Signature"

// ContentType is a delivery's: a CloudEvent in structured mode.
const ContentType = "application/cloudevents+json"

// Event is a CloudEvents 1.0 event in its JSON form, as a delivery's body carries it.
type Event struct {
	SpecVersion string `json:"specversion"`
	// ID is the change's number in the tenant's change feed: a change delivered again (at least
	// once) has the same id, which a receiver may use to drop it.
	ID string `json:"id"`
	// Source is the tenant's URL on this service.
	Source string `json:"source"`
	Type   string `json:"type"`
	// Subject is the agentId of the card changed.
	Subject         string    `json:"subject"`
	Time            time.Time `json:"time"`
	DataContentType string    `json:"datacontenttype"`
	Data            Change    `json:"data"`
}

// Change is an event's data: the change as cards.changes answers it.
type Change struct {
	Op       string      `json:"op"`
	AgentID  string      `json:"agentId"`
	Revision int64       `json:"revision"`
	Card     *cards.Card `json:"card,omitempty"`
}

// TypeOf is the event type of a change of the feed.
func TypeOf(c search.FeedChange) string {
	if c.Op == search.FeedRemove {
		return TypeRemoved
	}
	return TypeUpserted
}

// NewEvent is the event of change c of the tenant whose URL is source. Its time is when the
// change's card was written (an upsert's), or at for a removal, whose time the feed does not
// keep.
func NewEvent(source string, c search.FeedChange, at time.Time) Event {
	t := at
	if c.Card != nil && !c.Card.UpdatedAt.IsZero() {
		t = c.Card.UpdatedAt
	}
	return Event{SpecVersion: "1.0", ID: strconv.FormatInt(c.Seq, 10), Source: source, Type: TypeOf(c), Subject: c.AgentID,
		Time: t.UTC(), DataContentType: "application/json", Data: Change{Op: c.Op, AgentID: c.AgentID, Revision: c.Revision, Card: c.Card}}
}

// Signer makes a JWS with a detached payload; token.ServiceKeys is one. It adds "alg" and "kid"
// to header.
type Signer interface {
	SignDetached(header map[string]any, payload []byte) (protected, signature string, err error)
}

// Encode returns an event's body and the signature that goes with it in SignatureHeader. The
// protected header has "typ": the content type, so that a signature is not taken for another
// kind of document the same key signs.
func Encode(e Event, signer Signer) (body []byte, signature string, err error) {
	body, err = json.Marshal(e)
	if err != nil {
		return nil, "", err
	}
	protected, sig, err := signer.SignDetached(map[string]any{"typ": ContentType}, body)
	if err != nil {
		return nil, "", err
	}
	return body, protected + ".." + sig, nil
}
