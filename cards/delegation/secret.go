package delegation

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/tenants"
)

// SealedSecret is an endpoint secret as stored: sealed, with the endpoint URL it may be sent to.
// Header names the header it goes in, for the audit trail only: the sealed text holds it too, and
// that is what the call reads.
type SealedSecret struct {
	Endpoint string
	Header   string
	Sealed   string
}

// SecretStore keeps sealed endpoint secrets, one per card. A store must delete a card's secret
// with the card, so that a card created again under the same id does not inherit it.
type SecretStore interface {
	// PutSecret stores or replaces the sealed secret of the agent's endpoint.
	PutSecret(ctx context.Context, tenant tenants.ID, agentID string, s SealedSecret, at time.Time) error
	// GetSecret returns the sealed secret; ErrNotFound when the agent has none.
	GetSecret(ctx context.Context, tenant tenants.ID, agentID string) (SealedSecret, error)
	// GetSecrets returns the sealed secrets of those of the agents that have one.
	GetSecrets(ctx context.Context, tenant tenants.ID, agentIDs []string) (map[string]SealedSecret, error)
	// DeleteSecret removes it; ErrNotFound when there was none.
	DeleteSecret(ctx context.Context, tenant tenants.ID, agentID string) error
}

// MaxSecretBytes bounds a static endpoint secret.
const MaxSecretBytes = 4 << 10

// Credential is what a delegated call carries for its endpoint: Value as the whole value of the
// header Header, or, when Header is empty, as the bearer token of Authorization.
type Credential struct {
	Header string
	Value  string
}

// HeaderField returns the header a request carries the credential in and that header's value:
// Value as the bearer token of Authorization when Header is empty, else as Header's whole value
// (as it is in Authorization too). Both are empty when there is no credential.
func (c Credential) HeaderField() (name, value string) {
	switch {
	case c.Value == "":
		return "", ""
	case c.Header == "":
		return "Authorization", "Bearer " + c.Value
	}
	return c.Header, c.Value
}

// reservedHeaders are the headers a secret may not be sent in: those the service or HTTP itself
// sets on a delegated call (lowercase).
var reservedHeaders = map[string]bool{
	"host": true, "content-length": true, "content-type": true, "content-encoding": true, "transfer-encoding": true,
	"connection": true, "keep-alive": true, "upgrade": true, "te": true, "trailer": true, "expect": true,
	"accept": true, "accept-encoding": true, "user-agent": true, "cookie": true,
	"x-delegation-token": true, "a2a-version": true, "a2a-extensions": true,
}

// checkHeader refuses a header name a secret cannot go in: not an HTTP token of 1 to 64
// characters, or one the call sets itself (reservedHeaders, Proxy-* and Sec-*).
func checkHeader(name string) error {
	if name == "" || len(name) > 64 || strings.IndexFunc(name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", r))
	}) >= 0 {
		return fault.Errorf(fault.Invalid, "header: %q must be a header name of 1 to 64 letters, digits and !#$%%&'*+-.^_`|~: invalid", name)
	}
	lower := strings.ToLower(name)
	if reservedHeaders[lower] || strings.HasPrefix(lower, "proxy-") || strings.HasPrefix(lower, "sec-") {
		return fault.Errorf(fault.Invalid, "header: %s is set by the service or by HTTP on every call; a secret cannot go in it: invalid", name)
	}
	return nil
}

// A sealed secret's plain text is the secret alone (a bearer token), or, for one sent in a
// header of its own, headerMark, the header's name, headerMark and the secret: a secret holds no
// control character, so the two cannot be taken for each other.
const headerMark = "\x00"

func plainOf(c Credential) string {
	if c.Header == "" {
		return c.Value
	}
	return headerMark + c.Header + headerMark + c.Value
}

func credentialOf(plain string) Credential {
	if rest, ok := strings.CutPrefix(plain, headerMark); ok {
		if name, value, ok := strings.Cut(rest, headerMark); ok {
			return Credential{Header: name, Value: value}
		}
	}
	return Credential{Value: plain}
}

// EndpointSecrets keeps the static secret a card may hold for its endpoint, sealed with AES-GCM
// under a key from config. The secret goes out only in delegated calls and in probes of the
// endpoint's origin, in Authorization or in the header it was set for; no API returns it.
type EndpointSecrets struct {
	store SecretStore
	cards Cards
	gate  Gate
	authz Authorizer
	aead  cipher.AEAD
	now   func() time.Time
}

// NewEndpointSecrets returns the secrets service; key is 32 bytes (AES-256).
func NewEndpointSecrets(key []byte, store SecretStore, cards Cards, gate Gate, az Authorizer, now func() time.Time) (*EndpointSecrets, error) {
	if len(key) != 32 {
		return nil, errors.New("the endpoint secret key must be 32 bytes")
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	if now == nil {
		now = time.Now
	}
	return &EndpointSecrets{store: store, cards: cards, gate: gate, authz: az, aead: aead, now: now}, nil
}

// aad binds a sealed secret to its card and to the endpoint URL it was set for, so it can be
// copied neither to another card nor, by rewriting the stored URL, to another endpoint.
func aad(tenant tenants.ID, agentID, endpoint string) []byte {
	return []byte(string(tenant) + "\x00" + agentID + "\x00" + endpoint)
}

func (s *EndpointSecrets) seal(tenant tenants.ID, agentID, endpoint, secret string) string {
	nonce := make([]byte, s.aead.NonceSize())
	_, _ = rand.Read(nonce)
	return base64.StdEncoding.EncodeToString(s.aead.Seal(nonce, nonce, []byte(secret), aad(tenant, agentID, endpoint)))
}

func (s *EndpointSecrets) open(tenant tenants.ID, agentID, endpoint, sealed string) (string, error) {
	b, err := base64.StdEncoding.DecodeString(sealed)
	if err != nil || len(b) < s.aead.NonceSize() {
		return "", errors.New("endpoint secret: malformed sealed value")
	}
	n := s.aead.NonceSize()
	plain, err := s.aead.Open(nil, b[:n], b[n:], aad(tenant, agentID, endpoint))
	if err != nil {
		return "", fmt.Errorf("endpoint secret of %q: cannot open (wrong key?): %w", agentID, err)
	}
	return string(plain), nil
}

// authorize lets those who may write the card set or remove its secret, once the card exists.
func (s *EndpointSecrets) authorize(ctx context.Context, tenant tenants.ID, agentID string) (cards.Card, error) {
	if _, err := authz.Caller(ctx); err != nil {
		return cards.Card{}, err
	}
	ctx, err := s.gate.Enter(ctx, string(tenant))
	if err != nil {
		return cards.Card{}, err
	}
	if err := cards.ValidateAgentID(agentID); err != nil {
		return cards.Card{}, fault.Errorf(fault.NotFound, "card %q: not found", agentID)
	}
	if err := s.authz.Check(ctx, string(tenant), authz.CardObject(agentID), authz.ActCardsWrite); err != nil {
		return cards.Card{}, err
	}
	return s.cards.Get(ctx, tenant, agentID)
}

// Set stores the secret of the card's endpoint, bound to the endpoint URL the card has now: it
// is never sent anywhere else, even if the card's endpoint changes later. It goes as the bearer
// token of Authorization, or, with a header, as that header's whole value.
func (s *EndpointSecrets) Set(ctx context.Context, tenant tenants.ID, agentID, secret, header string) error {
	return s.set(ctx, tenant, agentID, "", secret, header)
}

// SetFor is Set for a card whose endpoint the caller has just written: it refuses (conflict)
// when the card's endpoint is no longer that one, so that a write racing it cannot have the
// secret bound to, and sent to, an endpoint another caller chose.
func (s *EndpointSecrets) SetFor(ctx context.Context, tenant tenants.ID, agentID, endpoint, secret, header string) error {
	return s.set(ctx, tenant, agentID, endpoint, secret, header)
}

func (s *EndpointSecrets) set(ctx context.Context, tenant tenants.ID, agentID, endpoint, secret, header string) error {
	card, err := s.authorize(ctx, tenant, agentID)
	if err != nil {
		return err
	}
	if endpoint != "" && card.Endpoint != endpoint {
		return fault.Errorf(fault.Conflict, "card %q: its endpoint changed meanwhile: conflict", agentID)
	}
	if card.Endpoint == "" {
		return fault.Errorf(fault.Invalid, "card %q has no endpoint to hold a secret for: invalid", agentID)
	}
	if err := CheckCredential(secret, header); err != nil {
		return err
	}
	plain := plainOf(Credential{Header: header, Value: secret})
	sealed := SealedSecret{Endpoint: card.Endpoint, Header: header, Sealed: s.seal(tenant, agentID, card.Endpoint, plain)}
	return s.store.PutSecret(ctx, tenant, agentID, sealed, s.now().UTC())
}

// CheckCredential refuses a secret Set would refuse: empty, over MaxSecretBytes, with a space or
// a control character, or for a header it cannot go in.
func CheckCredential(secret, header string) error {
	if secret == "" || len(secret) > MaxSecretBytes {
		return fault.Errorf(fault.Invalid, "secret must have 1 to %d bytes: invalid", MaxSecretBytes)
	}
	for _, r := range secret {
		if unicode.IsControl(r) || unicode.IsSpace(r) {
			return fault.New(fault.Invalid, "secret may not contain spaces or control characters (it goes in a header): invalid")
		}
	}
	if header != "" {
		return checkHeader(header)
	}
	return nil
}

// Kinds says how the calls to each of the cards, which the caller in ctx has read, carry their
// secret: "bearer" or "header", for each card whose secret is bound to its endpoint as it is
// now; a card missing from the map has none its calls would carry. The secret itself is opened
// only to tell the two apart and never leaves.
func (s *EndpointSecrets) Kinds(ctx context.Context, tenant tenants.ID, cs []cards.Card) (map[string]string, error) {
	if _, err := authz.Caller(ctx); err != nil {
		return nil, err
	}
	ctx, err := s.gate.Enter(ctx, string(tenant))
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(cs))
	for _, c := range cs {
		if c.Endpoint != "" {
			ids = append(ids, c.AgentID)
		}
	}
	kinds := map[string]string{}
	if len(ids) == 0 {
		return kinds, nil
	}
	sealed, err := s.store.GetSecrets(ctx, tenant, ids)
	if err != nil {
		return nil, err
	}
	for _, c := range cs {
		sec, ok := sealed[c.AgentID]
		if !ok || sec.Endpoint == "" || sec.Endpoint != c.Endpoint {
			continue
		}
		plain, err := s.open(tenant, c.AgentID, c.Endpoint, sec.Sealed)
		if err != nil {
			// A secret that does not open is sent by no call (a delegation to the card fails
			// to prepare): it is none for what the card's reader is told.
			continue
		}
		kinds[c.AgentID] = "bearer"
		if credentialOf(plain).Header != "" {
			kinds[c.AgentID] = "header"
		}
	}
	return kinds, nil
}

// Remove deletes the secret; the endpoint is then called with the delegation token.
func (s *EndpointSecrets) Remove(ctx context.Context, tenant tenants.ID, agentID string) error {
	if _, err := s.authorize(ctx, tenant, agentID); err != nil {
		return err
	}
	return s.store.DeleteSecret(ctx, tenant, agentID)
}

// Opener returns what the dispatcher and the prober read plain secrets with. It is not an entry
// point: it has no caller to check, so the doors get EndpointSecrets (Set and Remove) and only
// the dispatcher, which has admitted its caller, and the prober, which acts for no caller, get the
// Opener.
func (s *EndpointSecrets) Opener() Secrets { return opener{s} }

type opener struct{ s *EndpointSecrets }

// Secret returns the credential the agent holds for endpoint, with an empty Value when it has
// none for that URL (none at all, or one set while the card's endpoint was another URL).
func (o opener) Secret(ctx context.Context, tenant tenants.ID, agentID, endpoint string) (Credential, error) {
	return o.s.secret(ctx, tenant, agentID, endpoint)
}

func (s *EndpointSecrets) secret(ctx context.Context, tenant tenants.ID, agentID, endpoint string) (Credential, error) {
	sealed, err := s.store.GetSecret(ctx, tenant, agentID)
	if errors.Is(err, ErrNotFound) {
		return Credential{}, nil
	}
	if err != nil {
		return Credential{}, err
	}
	if sealed.Endpoint == "" || sealed.Endpoint != endpoint {
		return Credential{}, nil
	}
	plain, err := s.open(tenant, agentID, endpoint, sealed.Sealed)
	if err != nil {
		return Credential{}, err
	}
	return credentialOf(plain), nil
}
