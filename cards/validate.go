package cards

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/agentcards/agentcards/authz/fault"
)

var (
	agentIDPattern    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)
	capabilityPattern = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,128}$`)
	protocolPattern   = regexp.MustCompile(`^[a-z0-9][a-z0-9._+-]{0,31}$`)
)

// Bounds on free text, in characters. MaxShortText, the bound of a version, tag, protocol or
// list entry, also bounds the values a search filters on.
const (
	maxNameLength        = 200
	maxDescriptionLength = 8000
	MaxShortText         = 256
	maxURLLength         = 2048
)

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

func (p *problems) capability(i int, cp Capability) {
	field := fmt.Sprintf("capabilities[%d]", i)
	if !capabilityPattern.MatchString(cp.Name) {
		p.addf("%s.name: %q must match [A-Za-z0-9_.:-]{1,128}", field, cp.Name)
	}
	p.text(field+".title", cp.Title, maxNameLength)
	p.text(field+".description", cp.Description, maxDescriptionLength)
	if len(cp.InputSchema) > 0 && !isObject(cp.InputSchema) {
		p.addf("%s.inputSchema: must be a JSON object", field)
	}
	if len(cp.OutputSchema) > 0 && !isObject(cp.OutputSchema) {
		p.addf("%s.outputSchema: must be a JSON object", field)
	}
	p.list(field+".tags", cp.Tags, MaxTags)
	p.list(field+".examples", cp.Examples, 32)
	p.list(field+".inputModes", cp.InputModes, 32)
	p.list(field+".outputModes", cp.OutputModes, 32)
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

func (p *problems) resource(i int, r Resource) {
	field := fmt.Sprintf("resources[%d]", i)
	u, err := url.Parse(r.URI)
	if r.URI == "" || err != nil || u.Scheme == "" || (u.Host == "" && u.Opaque == "") || len(r.URI) > maxURLLength {
		p.addf("%s.uri: %q must be an absolute URI", field, r.URI)
	}
	p.text(field+".access", r.Access, 32)
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
