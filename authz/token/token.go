// Package token mints and verifies the JWTs of callers (golang-jwt), and holds the service's own
// signing keys: the delegation tokens it sends to agents, their JWKS, and detached signatures.
package token

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/authz/fault"
)

// Config pins how tokens are signed and checked.
type Config struct {
	// Algorithm is the only accepted "alg": HS256, RS256, ES256 or EdDSA.
	Algorithm string
	// Secret is the HS256 key.
	Secret []byte
	// PublicKeys verify RS256, ES256 and EdDSA tokens; any of them may have signed a token.
	PublicKeys []crypto.PublicKey
	// PrivateKey signs the tokens this service mints with an asymmetric algorithm (optional).
	PrivateKey crypto.Signer
	// Issuer and Audience are required in tokens, and set in minted ones, when not empty.
	Issuer   string
	Audience string
	// Leeway tolerates small clock skew between the token's issuer and this server.
	Leeway time.Duration
	// PlatformAdmins are subjects that are platform admins whatever their token says.
	PlatformAdmins []string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Claims are the JWT claims this service reads and mints.
type Claims struct {
	jwt.RegisteredClaims
	Tenant        string `json:"tenant,omitempty"`
	PlatformAdmin bool   `json:"platform_admin,omitempty"`
}

// Tokens mints and verifies JWTs.
type Tokens struct {
	cfg    Config
	method jwt.SigningMethod
	admins map[string]bool
	parser *jwt.Parser

	// verified remembers tokens already checked, with their validity window, so a client that
	// sends the same token on every request pays for its signature once.
	mu       sync.Mutex
	verified map[string]verifiedToken
}

type verifiedToken struct {
	p        authz.Principal
	nbf, exp time.Time
}

// maxVerified bounds the remembered tokens; past it the memory is emptied and refilled.
const maxVerified = 10000

// NewTokens checks cfg and returns a minter and verifier.
func NewTokens(cfg Config) (*Tokens, error) {
	t := &Tokens{cfg: cfg, admins: map[string]bool{}}
	switch cfg.Algorithm {
	case "HS256":
		if len(cfg.Secret) < 32 {
			return nil, errors.New("auth: HS256 needs a secret of at least 32 bytes")
		}
		t.method = jwt.SigningMethodHS256
	case "RS256", "ES256", "EdDSA":
		if len(cfg.PublicKeys) == 0 {
			return nil, fmt.Errorf("auth: %s needs at least one public key", cfg.Algorithm)
		}
		t.method = jwt.GetSigningMethod(cfg.Algorithm)
		for i, k := range cfg.PublicKeys {
			if err := keyFits(cfg.Algorithm, k); err != nil {
				return nil, fmt.Errorf("auth: public key %d: %w", i, err)
			}
		}
		if cfg.PrivateKey != nil {
			if err := keyFits(cfg.Algorithm, cfg.PrivateKey.Public()); err != nil {
				return nil, fmt.Errorf("auth: private key: %w", err)
			}
		}
	default:
		return nil, fmt.Errorf("auth: algorithm %q must be HS256, RS256, ES256 or EdDSA", cfg.Algorithm)
	}
	for _, s := range cfg.PlatformAdmins {
		t.admins[s] = true
	}
	opts := []jwt.ParserOption{
		jwt.WithValidMethods([]string{cfg.Algorithm}),
		jwt.WithExpirationRequired(),
		jwt.WithLeeway(cfg.Leeway),
		jwt.WithTimeFunc(t.now),
	}
	if cfg.Issuer != "" {
		opts = append(opts, jwt.WithIssuer(cfg.Issuer))
	}
	if cfg.Audience != "" {
		opts = append(opts, jwt.WithAudience(cfg.Audience))
	}
	t.parser = jwt.NewParser(opts...)
	return t, nil
}

func keyFits(alg string, k crypto.PublicKey) error {
	ok := false
	switch k.(type) {
	case *rsa.PublicKey:
		ok = alg == "RS256"
	case *ecdsa.PublicKey:
		ok = alg == "ES256"
	case ed25519.PublicKey:
		ok = alg == "EdDSA"
	}
	if !ok {
		return fmt.Errorf("a %T key cannot verify %s", k, alg)
	}
	return nil
}

func (t *Tokens) now() time.Time {
	if t.cfg.Now != nil {
		return t.cfg.Now()
	}
	return time.Now()
}

// Mint signs a token for subject acting in tenant, valid for ttl.
func (t *Tokens) Mint(subject, tenant string, ttl time.Duration, platformAdmin bool) (string, error) {
	if err := authz.ValidateSubject(subject); err != nil {
		return "", err
	}
	if ttl <= 0 {
		return "", fault.New(fault.Invalid, "ttl must be positive: invalid")
	}
	if tenant == "" && !platformAdmin {
		return "", fault.New(fault.Invalid, "a tenant is required unless the token is a platform admin's: invalid")
	}
	now := t.now()
	c := Claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Subject:   subject,
			Issuer:    t.cfg.Issuer,
			IssuedAt:  jwt.NewNumericDate(now),
			NotBefore: jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
		},
		Tenant:        tenant,
		PlatformAdmin: platformAdmin,
	}
	if t.cfg.Audience != "" {
		c.Audience = jwt.ClaimStrings{t.cfg.Audience}
	}
	var key any = t.cfg.Secret
	if t.cfg.Algorithm != "HS256" {
		if t.cfg.PrivateKey == nil {
			return "", errors.New("auth: minting " + t.cfg.Algorithm + " tokens needs auth.privateKeyFile")
		}
		key = t.cfg.PrivateKey
	}
	return jwt.NewWithClaims(t.method, c).SignedString(key)
}

// ValidUntil returns when a token Verify accepts stops being accepted (its exp, widened by the
// leeway): a long-lived answer, such as a live stream, ends then.
func (t *Tokens) ValidUntil(raw string) (time.Time, error) {
	if _, err := t.Verify(raw); err != nil {
		return time.Time{}, err
	}
	t.mu.Lock()
	v, ok := t.verified[raw]
	t.mu.Unlock()
	if !ok {
		// Forgotten meanwhile (the memory was refilled): read the claims again.
		var c Claims
		if _, err := t.parser.ParseWithClaims(raw, &c, t.keyFunc); err != nil {
			return time.Time{}, fault.Wrap(err, fault.Unauthenticated, "the bearer token is not valid")
		}
		v.exp = c.ExpiresAt.Time
	}
	return v.exp.Add(t.cfg.Leeway), nil
}

// Verify checks a token and returns its principal. Every failure is authz.ErrUnauthenticated; the cause
// is kept in the chain for logs only.
func (t *Tokens) Verify(raw string) (authz.Principal, error) {
	now := t.now()
	t.mu.Lock()
	v, ok := t.verified[raw]
	t.mu.Unlock()
	// The same window the parser applies: exp is exclusive, both ends widened by the leeway.
	if ok && now.Before(v.exp.Add(t.cfg.Leeway)) && !now.Add(t.cfg.Leeway).Before(v.nbf) {
		return v.p, nil
	}
	var c Claims
	tok, err := t.parser.ParseWithClaims(raw, &c, t.keyFunc)
	if err == nil {
		err = checkStrict(tok)
	}
	if err != nil {
		return authz.Principal{}, fault.Wrap(err, fault.Unauthenticated, "the bearer token is not valid")
	}
	if err := authz.ValidateSubject(c.Subject); err != nil {
		return authz.Principal{}, fault.Wrap(err, fault.Unauthenticated, "the bearer token's subject is not valid")
	}
	p := authz.Principal{Subject: c.Subject, Tenant: c.Tenant, PlatformAdmin: c.PlatformAdmin || t.admins[c.Subject]}
	if p.Tenant == "" && !p.PlatformAdmin {
		return authz.Principal{}, fault.New(fault.Unauthenticated, "the bearer token has no tenant claim")
	}
	v = verifiedToken{p: p, exp: c.ExpiresAt.Time} // exp is required, so set
	if c.NotBefore != nil {
		v.nbf = c.NotBefore.Time
	}
	t.mu.Lock()
	if len(t.verified) >= maxVerified || t.verified == nil {
		t.verified = make(map[string]verifiedToken, 64)
	}
	t.verified[raw] = v
	t.mu.Unlock()
	return p, nil
}

// checkStrict refuses, in a token golang-jwt has parsed and verified, what the RFCs forbid but
// the library lets through: a "crit" header (RFC 7515 §4.1.11: we understand no extension, and
// an empty list must not be sent), and an exp, nbf or iat that is not a JSON number (RFC 7519
// §2), which jwt.NumericDate reads through json.Number, so "exp": "1999999999" would count.
func checkStrict(tok *jwt.Token) error {
	if _, ok := tok.Header["crit"]; ok {
		return fmt.Errorf("%w: the crit header lists extensions this server does not understand", jwt.ErrTokenUnverifiable)
	}
	// The parser decoded the same segment with the same encoding, so this cannot fail unseen.
	parts := strings.Split(tok.Raw, ".")
	if len(parts) != 3 {
		return jwt.ErrTokenMalformed
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return fmt.Errorf("%w: %w", jwt.ErrTokenMalformed, err)
	}
	// The same tags as jwt.RegisteredClaims, so encoding/json picks the member the library read
	// (names match case-insensitively; the last duplicate wins). A null is kept, as "null".
	var dates struct {
		Exp json.RawMessage `json:"exp"`
		Nbf json.RawMessage `json:"nbf"`
		Iat json.RawMessage `json:"iat"`
	}
	if err := json.Unmarshal(payload, &dates); err != nil {
		return fmt.Errorf("%w: %w", jwt.ErrTokenMalformed, err)
	}
	for _, d := range []struct {
		name string
		v    json.RawMessage
	}{{"exp", dates.Exp}, {"nbf", dates.Nbf}, {"iat", dates.Iat}} {
		if len(d.v) > 0 && !strings.ContainsRune("-0123456789", rune(d.v[0])) {
			return fmt.Errorf("%w: %s is %s, not a JSON number", jwt.ErrTokenInvalidClaims, d.name, d.v)
		}
	}
	// Claim names are case-sensitive (RFC 7519 §10.1.1), but encoding/json matches them without
	// case: "EXP" would be read as exp, "Platform_Admin" as platform_admin. Refuse a member that
	// only differs in case from a claim we read.
	var members map[string]json.RawMessage
	if err := json.Unmarshal(payload, &members); err != nil {
		return fmt.Errorf("%w: %w", jwt.ErrTokenMalformed, err)
	}
	for name := range members {
		for _, claim := range claimNames {
			if name != claim && strings.EqualFold(name, claim) {
				return fmt.Errorf("%w: %q is not the claim %q (names are case-sensitive)", jwt.ErrTokenInvalidClaims, name, claim)
			}
		}
	}
	return nil
}

// claimNames are the claims our tokens are read for: the registered ones and ours, taken from
// the json tags of the claim types so that a claim added there is covered here.
var claimNames = func() []string {
	names := []string{"iss", "sub", "aud", "exp", "nbf", "iat", "jti"}
	for _, t := range []reflect.Type{reflect.TypeFor[Claims](), reflect.TypeFor[DelegationClaims]()} {
		for i := range t.NumField() {
			if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" && !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	return names
}()

func (t *Tokens) keyFunc(*jwt.Token) (any, error) {
	if t.cfg.Algorithm == "HS256" {
		return t.cfg.Secret, nil
	}
	keys := make([]jwt.VerificationKey, len(t.cfg.PublicKeys))
	for i, k := range t.cfg.PublicKeys {
		keys[i] = k
	}
	return jwt.VerificationKeySet{Keys: keys}, nil
}
