package cards

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentcards/agentcards/authz/fault"
)

// The identifiers of a card, as the messages below spell them: agentIDPattern is
// [A-Za-z0-9][A-Za-z0-9_.-]{0,127}, capabilityPattern [A-Za-z0-9_.:-]{1,128}, protocolPattern
// [a-z0-9][a-z0-9._+-]{0,31}.
var (
	agentIDPattern    = charPattern{first: charSet(upper + lower + digits), rest: charSet(upper + lower + digits + "_.-"), max: 128}
	capabilityPattern = charPattern{first: charSet(upper + lower + digits + "_.:-"), rest: charSet(upper + lower + digits + "_.:-"), max: 128}
	protocolPattern   = charPattern{first: charSet(lower + digits), rest: charSet(lower + digits + "._+-"), max: 32}
)

const (
	upper  = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	lower  = "abcdefghijklmnopqrstuvwxyz"
	digits = "0123456789"
)

// charPattern is the shape of a card's identifiers: 1 to max ASCII characters, the first from one
// set and the others from another. It is matched byte by byte: a regexp took several times as
// long, for every card's id, capabilities and protocols.
type charPattern struct {
	first, rest *[256]bool
	max         int
}

// MatchString reports whether the whole of s has the pattern's shape.
func (p charPattern) MatchString(s string) bool {
	if len(s) == 0 || len(s) > p.max || !p.first[s[0]] {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !p.rest[s[i]] {
			return false
		}
	}
	return true
}

// charSet returns the set of the characters in chars.
func charSet(chars string) *[256]bool {
	var set [256]bool
	for i := range len(chars) {
		set[chars[i]] = true
	}
	return &set
}

// Bounds on free text, in characters. MaxShortText, the bound of a version, tag, protocol or
// list entry, also bounds the values a search filters on.
const (
	maxNameLength        = 200
	maxDescriptionLength = 8000
	MaxShortText         = 256
	maxURLLength         = 2048
)

// plainText reports whether s is UTF-8 without control characters (C0, DEL, C1): what text stored
// in a column of its own, such as a card's name, may hold. Postgres text holds neither a NUL nor
// a byte that is not UTF-8, and a control character in a name only garbles lists and logs; text
// kept inside the card's document (a description, metadata) is escaped there and may hold them.
func plainText(s string) bool {
	return utf8.ValidString(s) && strings.IndexFunc(s, unicode.IsControl) < 0
}

// ValidateAgentID checks an agent id as used in paths and policy objects.
func ValidateAgentID(id string) error {
	if !agentIDPattern.MatchString(id) {
		return fault.Errorf(fault.Invalid, "agentId %q must match [A-Za-z0-9][A-Za-z0-9_.-]{0,127}: invalid", id)
	}
	return nil
}

// problems collects validation messages so a client sees all of them at once.
type problems []string

func (p *problems) addf(format string, args ...any) { *p = append(*p, fmt.Sprintf(format, args...)) }

func (p problems) err() error {
	if len(p) == 0 {
		return nil
	}
	const shown = 10
	msg := strings.Join(p[:min(len(p), shown)], "; ")
	if len(p) > shown {
		msg += fmt.Sprintf("; and %d more", len(p)-shown)
	}
	return fault.Errorf(fault.Invalid, "%s: invalid", msg)
}

// Validate checks every client-set field and reports all problems, each naming its field.
func (c Card) Validate() error {
	var p problems
	if !agentIDPattern.MatchString(c.AgentID) {
		p.addf("agentId: %q must match [A-Za-z0-9][A-Za-z0-9_.-]{0,127}", c.AgentID)
	}
	switch {
	case strings.TrimSpace(c.Name) == "":
		p.addf("name: is required")
	case utf8.RuneCountInString(c.Name) > maxNameLength:
		p.addf("name: longer than %d characters", maxNameLength)
	case !plainText(c.Name):
		p.addf("name: must not contain control characters (such as NUL or a line break)")
	}
	p.text("description", c.Description, maxDescriptionLength)
	p.text("version", c.Version, MaxShortText)
	if c.Endpoint != "" {
		p.httpURL("endpoint", c.Endpoint)
	}
	for i, proto := range c.Protocols {
		if !protocolPattern.MatchString(proto) {
			p.addf("protocols[%d]: %q must be a lowercase token ([a-z0-9][a-z0-9._+-]{0,31})", i, proto)
		}
	}
	p.list("protocols", c.Protocols, 32)
	if len(c.Capabilities) > MaxCapabilities {
		p.addf("capabilities: at most %d, got %d", MaxCapabilities, len(c.Capabilities))
	}
	seen := make(map[string]int, len(c.Capabilities))
	for i, cp := range c.Capabilities {
		p.capability(i, cp)
		if j, dup := seen[cp.Name]; dup && cp.Name != "" {
			p.addf("capabilities[%d].name: %q is already used by capabilities[%d]", i, cp.Name, j)
		} else {
			seen[cp.Name] = i
		}
	}
	if a := c.AuthRequirements; a != nil {
		switch a.Type {
		case AuthBearer, AuthOAuth2, AuthAPIKey, AuthNone:
		default:
			p.addf("authRequirements.type: %q must be one of bearer, oauth2, api-key, none", a.Type)
		}
		p.list("authRequirements.scopes", a.Scopes, 64)
		p.flows(a)
	}
	for i, r := range c.Resources {
		p.resource(i, r)
	}
	if len(c.Resources) > 64 {
		p.addf("resources: at most 64, got %d", len(c.Resources))
	}
	p.list("tags", c.Tags, MaxTags)
	if len(c.Metadata) > 0 && !isObject(c.Metadata) {
		p.addf("metadata: must be a JSON object")
	}
	switch c.Status {
	case "", StatusActive, StatusDeprecated, StatusDisabled:
	default:
		p.addf("status: %q must be one of active, deprecated, disabled", c.Status)
	}
	if d := c.Deprecation; d != nil {
		p.text("deprecation.message", d.Message, maxDescriptionLength)
		if d.Successor != "" {
			if !agentIDPattern.MatchString(d.Successor) {
				p.addf("deprecation.successor: %q must be an agentId ([A-Za-z0-9][A-Za-z0-9_.-]{0,127})", d.Successor)
			} else if d.Successor == c.AgentID {
				p.addf("deprecation.successor: a card cannot succeed itself")
			}
		}
	}
	switch c.Visibility {
	case "", VisibilityPrivate, VisibilityTenant, VisibilityPublic:
	default:
		p.addf("visibility: %q must be one of private, tenant, public", c.Visibility)
	}
	if c.A2A != nil {
		p.a2a(c.A2A)
		for name, raw := range c.A2A.SkillSecurityRequirements {
			if _, ok := seen[name]; !ok {
				p.addf("a2a.skillSecurityRequirements.%s: no capability has that name", name)
			} else if !bytes.HasPrefix(bytes.TrimSpace(raw), []byte("[")) {
				p.addf("a2a.skillSecurityRequirements.%s: must be a JSON array", name)
			}
		}
	}
	return p.err()
}

// capability checks capabilities[i]. Its problems are collected under their own field names and
// prefixed after, so that the field names of a card's many capabilities are built only for the
// few problems there are.
func (p *problems) capability(i int, cp Capability) {
	var q problems
	if !capabilityPattern.MatchString(cp.Name) {
		q.addf("name: %q must match [A-Za-z0-9_.:-]{1,128}", cp.Name)
	}
	q.text("title", cp.Title, maxNameLength)
	q.text("description", cp.Description, maxDescriptionLength)
	if len(cp.InputSchema) > 0 && !isObject(cp.InputSchema) {
		q.addf("inputSchema: must be a JSON object")
	}
	if len(cp.OutputSchema) > 0 && !isObject(cp.OutputSchema) {
		q.addf("outputSchema: must be a JSON object")
	}
	q.list("tags", cp.Tags, MaxTags)
	q.list("examples", cp.Examples, 32)
	q.list("inputModes", cp.InputModes, 32)
	q.list("outputModes", cp.OutputModes, 32)
	for _, msg := range q {
		p.addf("capabilities[%d].%s", i, msg)
	}
}

// oauthFlowKinds are the members of an A2A 1.0 OAuthFlows object, of which it holds exactly one.
var oauthFlowKinds = map[string]bool{"authorizationCode": true, "clientCredentials": true, "deviceCode": true, "implicit": true, "password": true}

// flows checks authRequirements.flows: required with oauth2 (A2A clients refuse an OAuth2 scheme
// without a flow), exactly one flow object, and absent with the other types.
func (p *problems) flows(a *AuthRequirements) {
	if a.Type != AuthOAuth2 {
		if len(a.Flows) > 0 {
			p.addf("authRequirements.flows: only with type oauth2")
		}
		return
	}
	var flows map[string]json.RawMessage
	if len(a.Flows) == 0 || json.Unmarshal(a.Flows, &flows) != nil || len(flows) != 1 {
		p.addf("authRequirements.flows: oauth2 needs exactly one flow, e.g. {\"clientCredentials\": {\"tokenUrl\": \"https://...\", \"scopes\": {}}}")
		return
	}
	for kind, body := range flows {
		if !oauthFlowKinds[kind] || !isObject(body) {
			p.addf("authRequirements.flows.%s: must be one of authorizationCode, clientCredentials, deviceCode, implicit, password, with an object", kind)
		}
	}
}

// resource checks resources[i], naming its fields only for a problem (as capability does).
func (p *problems) resource(i int, r Resource) {
	var q problems
	u, err := url.Parse(r.URI)
	if r.URI == "" || err != nil || u.Scheme == "" || (u.Host == "" && u.Opaque == "") || len(r.URI) > maxURLLength {
		q.addf("uri: %q must be an absolute URI", r.URI)
	}
	q.text("access", r.Access, 32)
	for _, msg := range q {
		p.addf("resources[%d].%s", i, msg)
	}
}

// a2aInterface is one entry of a2a.interfaces: an A2A 1.0 AgentInterface.
type a2aInterface struct {
	URL             string `json:"url"`
	ProtocolBinding string `json:"protocolBinding"`
	Tenant          string `json:"tenant,omitempty"`
	ProtocolVersion string `json:"protocolVersion"`
}

func (p *problems) a2a(a *A2A) {
	if a.Provider != nil && a.Provider.URL != "" {
		p.httpURL("a2a.provider.url", a.Provider.URL)
	}
	if a.IconURL != "" {
		p.httpURL("a2a.iconUrl", a.IconURL)
	}
	if a.DocumentationURL != "" {
		p.httpURL("a2a.documentationUrl", a.DocumentationURL)
	}
	p.list("a2a.defaultInputModes", a.DefaultInputModes, 32)
	p.list("a2a.defaultOutputModes", a.DefaultOutputModes, 32)
	for field, raw := range map[string][]byte{
		"a2a.extensions": a.Extensions, "a2a.interfaces": a.Interfaces,
		"a2a.securityRequirements": a.SecurityRequirements,
	} {
		if len(raw) > 0 && !bytes.HasPrefix(bytes.TrimSpace(raw), []byte("[")) {
			p.addf("%s: must be a JSON array", field)
		}
	}
	if len(a.SecuritySchemes) > 0 && !isObject(a.SecuritySchemes) {
		p.addf("a2a.securitySchemes: must be a JSON object")
	}
	if len(a.Interfaces) > 0 {
		var ifaces []a2aInterface
		if err := DecodeStrict(a.Interfaces, &ifaces); err != nil {
			p.addf("a2a.interfaces: must be a list of {url, protocolBinding, protocolVersion, tenant?}")
			return
		}
		for i, f := range ifaces {
			field := fmt.Sprintf("a2a.interfaces[%d]", i)
			p.httpURL(field+".url", f.URL)
			if f.ProtocolBinding == "" || f.ProtocolVersion == "" {
				p.addf("%s: protocolBinding and protocolVersion are required", field)
			} else if _, ok := A2AVersion(f.ProtocolVersion); !ok {
				p.addf("%s.protocolVersion: %q is not a version (major.minor, as 1.0 or 0.3.0)", field, f.ProtocolVersion)
			}
		}
	}
}

// CheckHTTPURL checks that raw is an absolute http or https URL with a host and no user-info, as
// every URL of a card must be; the error (ErrInvalid) names field. Imports check the URLs they
// fetch with it.
func CheckHTTPURL(field, raw string) error {
	var p problems
	p.httpURL(field, raw)
	return p.err()
}

// httpURL checks an absolute http(s) URL with a host and no user-info: credentials in a URL end
// up in logs and in every response that shows the card.
func (p *problems) httpURL(field, raw string) {
	u, err := url.Parse(raw)
	switch {
	case err != nil || len(raw) > maxURLLength:
		p.addf("%s: %q is not a valid URL", field, raw)
	case u.Scheme != "http" && u.Scheme != "https":
		p.addf("%s: %q must be an absolute http or https URL", field, raw)
	case u.Hostname() == "":
		p.addf("%s: %q has no host", field, raw)
	case u.User != nil:
		p.addf("%s: must not contain user info (credentials)", field)
	}
}

func (p *problems) text(field, s string, max int) {
	if utf8.RuneCountInString(s) > max {
		p.addf("%s: longer than %d characters", field, max)
	}
}

// list checks a list of short strings: bounded count, no empty entries.
func (p *problems) list(field string, items []string, max int) {
	if len(items) > max {
		p.addf("%s: at most %d entries, got %d", field, max, len(items))
		return
	}
	for i, s := range items {
		if strings.TrimSpace(s) == "" {
			p.addf("%s[%d]: must not be empty", field, i)
		} else if utf8.RuneCountInString(s) > MaxShortText {
			p.addf("%s[%d]: longer than %d characters", field, i, MaxShortText)
		}
	}
}

func isObject(raw []byte) bool {
	return bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{"))
}
