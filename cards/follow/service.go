package follow

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	crand "crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/authz/fault"
	"github.com/agentcards/agentcards/tenants"
)

// Gate admits the caller in ctx into a tenant; tenants.Service is the one gate.
type Gate interface {
	Enter(ctx context.Context, tenant string) (context.Context, error)
}

// Checker answers whether the caller in ctx may act on an object of a tenant, and records a
// refused write (policy.Enforcers).
type Checker interface {
	Check(ctx context.Context, tenant, obj, act string) error
}

// DefaultMaxPerTenant bounds the sources of one tenant when the service names no bound.
const DefaultMaxPerTenant = 100

// Service is what the API does with a tenant's sources: follow one, list them, read one with the
// state of its sync, and stop following one (which removes its cards). Every call needs
// sources:manage on sources: a source writes cards into the tenant, whatever its caller may write.
type Service struct {
	Store Store
	Gate  Gate
	Authz Checker
	// Tokens seals the tokens sent to agentcards sources; nil refuses sources with a token.
	Tokens *Sealer
	// Refused says whether the outbound guard refuses a host that is a literal address;
	// PlainHTTP whether an agentcards source on the host may be read over http.
	Refused, PlainHTTP func(host string) bool
	// MaxPerTenant bounds a tenant's sources (DefaultMaxPerTenant when 0).
	MaxPerTenant int
	// Wake, when set, is told of a source created or removed, so that its sync need not wait
	// for the next poll.
	Wake func()
	Now  func() time.Time
}

// Create validates spec and stores the source, due at once.
func (s *Service) Create(ctx context.Context, tenant tenants.ID, spec Spec) (Source, error) {
	ctx, err := s.enter(ctx, tenant)
	if err != nil {
		return Source{}, err
	}
	if spec, err = spec.Validate(s.Refused, s.PlainHTTP); err != nil {
		return Source{}, err
	}
	var id [8]byte
	_, _ = crand.Read(id[:])
	now := s.now()
	src := Source{ID: "src_" + hex.EncodeToString(id[:]), Kind: spec.Kind, URL: spec.URL, URLs: spec.URLs, Token: spec.Token != "",
		Interval: spec.Interval, State: StateSyncing, NextSyncAt: now, CreatedAt: now, UpdatedAt: now}
	sealed := ""
	if spec.Token != "" {
		if s.Tokens == nil {
			return Source{}, fault.New(fault.Invalid, "token: this server has no secret key (delegation.secretKey) to keep tokens with: invalid")
		}
		sealed = s.Tokens.Seal(tenant, src, spec.Token)
	}
	max := s.MaxPerTenant
	if max <= 0 {
		max = DefaultMaxPerTenant
	}
	stored, err := s.Store.Create(ctx, tenant, src, sealed, max)
	if err != nil {
		return Source{}, err
	}
	s.wake()
	return stored, nil
}

// List answers the tenant's sources, oldest first.
func (s *Service) List(ctx context.Context, tenant tenants.ID) ([]Source, error) {
	ctx, err := s.enter(ctx, tenant)
	if err != nil {
		return nil, err
	}
	return s.Store.List(ctx, tenant)
}

// Get answers one source with the state of its sync.
func (s *Service) Get(ctx context.Context, tenant tenants.ID, id string) (Source, error) {
	ctx, err := s.enter(ctx, tenant)
	if err != nil {
		return Source{}, err
	}
	if err := ValidateID(id); err != nil {
		return Source{}, err
	}
	return s.Store.Get(ctx, tenant, id)
}

// Update changes a source's token (an agentcards source's: sent from its next sync on; "" drops
// it) or interval (a polled source's). A failing source is tried again at once.
func (s *Service) Update(ctx context.Context, tenant tenants.ID, id string, token *string, interval *int) (Source, error) {
	ctx, err := s.enter(ctx, tenant)
	if err != nil {
		return Source{}, err
	}
	if err := ValidateID(id); err != nil {
		return Source{}, err
	}
	cur, err := s.Store.Get(ctx, tenant, id)
	if err != nil {
		return Source{}, err
	}
	spec := Spec{Kind: cur.Kind, URL: cur.URL, URLs: cur.URLs, Interval: cur.Interval}
	if cur.Kind == KindAgentcards {
		spec.Interval = 0
	}
	if token != nil {
		spec.Token = *token
	}
	if interval != nil {
		if *interval < int(MinInterval/time.Second) || *interval > int(MaxInterval/time.Second) {
			return Source{}, fault.Errorf(fault.Invalid, "intervalSeconds: from %d to %d: invalid", int(MinInterval.Seconds()), int(MaxInterval.Seconds()))
		}
		spec.Interval = *interval
	}
	// The source as it would be must be one create takes; its URLs were, and are not checked
	// against the guard again.
	if _, err := spec.Validate(nil, func(string) bool { return true }); err != nil {
		return Source{}, err
	}
	p := Patch{Interval: interval, At: s.now()}
	if token != nil {
		sealed := ""
		if *token != "" {
			if s.Tokens == nil {
				return Source{}, fault.New(fault.Invalid, "token: this server has no secret key (delegation.secretKey) to keep tokens with: invalid")
			}
			sealed = s.Tokens.Seal(tenant, cur, *token)
		}
		p.SealedToken = &sealed
	}
	src, err := s.Store.Update(ctx, tenant, id, p)
	if err != nil {
		return Source{}, err
	}
	s.wake()
	return src, nil
}

// Following reports whether the tenant follows the source (a source being removed counts): the
// card service asks it of a mirrored card before refusing a write to it. The caller has entered
// the tenant.
func (s *Service) Following(ctx context.Context, tenant tenants.ID, id string) (bool, error) {
	if ValidateID(id) != nil {
		return false, nil
	}
	_, err := s.Store.Get(ctx, tenant, id)
	if fault.KindOf(err) == fault.NotFound {
		return false, nil
	}
	return err == nil, err
}

// Remove stops following the source: it is marked removing at once (its sync stops), and the
// follower removes its cards, then the source.
func (s *Service) Remove(ctx context.Context, tenant tenants.ID, id string) (Source, error) {
	ctx, err := s.enter(ctx, tenant)
	if err != nil {
		return Source{}, err
	}
	if err := ValidateID(id); err != nil {
		return Source{}, err
	}
	src, err := s.Store.Removing(ctx, tenant, id, s.now())
	if err != nil {
		return Source{}, err
	}
	s.wake()
	return src, nil
}

// ValidateID refuses, as not found, an id no source can have: "src_" and hex digits.
func ValidateID(id string) error {
	rest, ok := strings.CutPrefix(id, "src_")
	if !ok || len(rest) == 0 || len(rest) > 32 || strings.Trim(rest, "0123456789abcdef") != "" {
		return fault.Errorf(fault.NotFound, "source %q: not found", id)
	}
	return nil
}

// enter admits the caller into the tenant and checks sources:manage on sources.
func (s *Service) enter(ctx context.Context, tenant tenants.ID) (context.Context, error) {
	if _, err := authz.Caller(ctx); err != nil {
		return ctx, err
	}
	ctx, err := s.Gate.Enter(ctx, string(tenant))
	if err != nil {
		return ctx, err
	}
	return ctx, s.Authz.Check(ctx, string(tenant), authz.ObjSources, authz.ActSourcesManage)
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

func (s *Service) wake() {
	if s.Wake != nil {
		s.Wake()
	}
}

// Sealer seals and opens the tokens sent to agentcards sources (AES-256-GCM), each bound to its
// tenant, source and URL, so that a sealed token copied to another source or URL does not open.
type Sealer struct{ aead cipher.AEAD }

// NewSealer returns a sealer with key (32 bytes).
func NewSealer(key []byte) (*Sealer, error) {
	if len(key) != 32 {
		return nil, errors.New("the key that seals source tokens must be 32 bytes")
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Sealer{aead: aead}, nil
}

func tokenAAD(tenant tenants.ID, src Source) []byte {
	return []byte(string(tenant) + "\x00" + src.ID + "\x00" + src.URL)
}

// Seal seals the source's token.
func (s *Sealer) Seal(tenant tenants.ID, src Source, token string) string {
	nonce := make([]byte, s.aead.NonceSize())
	_, _ = crand.Read(nonce)
	return base64.StdEncoding.EncodeToString(s.aead.Seal(nonce, nonce, []byte(token), tokenAAD(tenant, src)))
}

// Open opens the source's sealed token.
func (s *Sealer) Open(tenant tenants.ID, src Source, sealed string) (string, error) {
	b, err := base64.StdEncoding.DecodeString(sealed)
	n := s.aead.NonceSize()
	if err != nil || len(b) < n {
		return "", errors.New("the source's token is not a sealed value")
	}
	plain, err := s.aead.Open(nil, b[:n], b[n:], tokenAAD(tenant, src))
	if err != nil {
		return "", fmt.Errorf("the source's token cannot be opened (another secret key?): %w", err)
	}
	return string(plain), nil
}
