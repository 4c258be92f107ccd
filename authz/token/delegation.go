package token

import (
	"errors"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/authz/fault"
)

// DelegationClaims are the claims of the token the service sends with each delegated task: the
// agent can check with the keys at /.well-known/jwks.json that the call comes from us, for
// which tenant, caller and capability, and how deep in a chain it is. "sub" is the agent called
// and "aud" its endpoint.
type DelegationClaims struct {
	jwt.RegisteredClaims
	Tenant       string `json:"tenant"`
	Caller       string `json:"caller"`
	Capability   string `json:"capability"`
	DelegationID string `json:"delegationId"`
	Depth        int    `json:"depth"`
}

// VerifyDelegation checks a delegation token the service signed (an agent presenting the token
// it received, to delegate further) and returns the principal it stands for: the agent, as
// authz.AgentSubject(sub) and Delegated, in the token's tenant, one delegation deep per hop. The audience is the agent's endpoint, not us, so
// it is not checked; the issuer, signature, expiry and claims are.
//
// An agent sends the same token with every call it makes for its delegation (each delegation it
// makes further, each read of their records), so a token already verified is remembered with its
// issuer and validity window, as Tokens.Verify does: its signature is checked once.
func (s *ServiceKeys) VerifyDelegation(raw, issuer string, leeway time.Duration, now func() time.Time) (authz.Principal, error) {
	if now == nil {
		now = time.Now
	}
	at := now()
	s.mu.Lock()
	v, ok := s.verified[raw]
	s.mu.Unlock()
	// The window the parser applies: exp is exclusive, both ends widened by the leeway.
	if ok && v.issuer == issuer && at.Before(v.exp.Add(leeway)) && !at.Add(leeway).Before(v.nbf) {
		return v.p, nil
	}
	p, c, err := s.verifyDelegation(raw, issuer, leeway, now)
	if err != nil {
		return p, err
	}
	v = verifiedDelegation{verifiedToken: verifiedToken{p: p, exp: c.ExpiresAt.Time}, issuer: issuer} // exp is required, so set
	if c.NotBefore != nil {
		v.nbf = c.NotBefore.Time
	}
	s.mu.Lock()
	if len(s.verified) >= maxVerified || s.verified == nil {
		s.verified = make(map[string]verifiedDelegation, 64)
	}
	s.verified[raw] = v
	s.mu.Unlock()
	return p, nil
}

// verifiedDelegation is a delegation token VerifyDelegation has checked, for issuer.
type verifiedDelegation struct {
	verifiedToken
	issuer string
}

// verifyDelegation checks the token's signature and claims (see VerifyDelegation).
func (s *ServiceKeys) verifyDelegation(raw, issuer string, leeway time.Duration, now func() time.Time) (authz.Principal, DelegationClaims, error) {
	parser := jwt.NewParser(jwt.WithValidMethods([]string{"ES256", "EdDSA"}), jwt.WithExpirationRequired(),
		jwt.WithIssuer(issuer), jwt.WithLeeway(leeway), jwt.WithTimeFunc(now))
	var c DelegationClaims
	tok, err := parser.ParseWithClaims(raw, &c, func(tok *jwt.Token) (any, error) {
		kid, _ := tok.Header["kid"].(string)
		k, ok := s.Find(kid)
		if !ok {
			return nil, errors.New("unknown kid")
		}
		if tok.Method.Alg() != k.Alg {
			return nil, errors.New("alg does not match the key")
		}
		return k.Signer.Public(), nil
	})
	if err == nil {
		err = checkStrict(tok) // what the library lets through: crit, dates that are not numbers
	}
	if err != nil {
		return authz.Principal{}, c, fault.Wrap(err, fault.Unauthenticated, "the bearer token is not valid")
	}
	if err := authz.ValidateSubject(c.Subject); err != nil {
		return authz.Principal{}, c, fault.Wrap(err, fault.Unauthenticated, "the bearer token's subject is not valid")
	}
	if c.Tenant == "" || c.DelegationID == "" || c.Depth < 1 {
		return authz.Principal{}, c, fault.New(fault.Unauthenticated, "the bearer token is not a delegation token")
	}
	return authz.Principal{Subject: authz.AgentSubject(c.Subject), Tenant: c.Tenant, Depth: c.Depth, Delegated: true}, c, nil
}
