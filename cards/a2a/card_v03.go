package a2a

import (
	"encoding/json"
)

// AgentCardV03 is an A2A 0.3 Agent Card, for clients that predate 1.0: one preferred url and
// transport, OpenAPI-style security schemes and a `security` list.
type AgentCardV03 struct {
	ProtocolVersion                   string                `json:"protocolVersion"`
	Name                              string                `json:"name"`
	Description                       string                `json:"description"`
	URL                               string                `json:"url"`
	PreferredTransport                string                `json:"preferredTransport"`
	AdditionalInterfaces              []agentInterfaceV03   `json:"additionalInterfaces,omitempty"`
	Provider                          *providerV03          `json:"provider,omitempty"`
	IconURL                           string                `json:"iconUrl,omitempty"`
	Version                           string                `json:"version"`
	DocumentationURL                  string                `json:"documentationUrl,omitempty"`
	Capabilities                      capabilitiesV03       `json:"capabilities"`
	SecuritySchemes                   map[string]any        `json:"securitySchemes,omitempty"`
	Security                          []map[string][]string `json:"security,omitempty"`
	DefaultInputModes                 []string              `json:"defaultInputModes"`
	DefaultOutputModes                []string              `json:"defaultOutputModes"`
	Skills                            []agentSkillV03       `json:"skills"`
	SupportsAuthenticatedExtendedCard *bool                 `json:"supportsAuthenticatedExtendedCard,omitempty"`
	Signatures                        []AgentCardSignature  `json:"signatures,omitempty"`
}

// ProtocolVersion03 is the protocolVersion written in 0.3 cards.
const ProtocolVersion03 = "0.3.0"

type agentInterfaceV03 struct {
	URL       string `json:"url"`
	Transport string `json:"transport"`
}

type providerV03 struct {
	Organization string `json:"organization"`
	URL          string `json:"url"`
}

type capabilitiesV03 struct {
	Streaming         *bool           `json:"streaming,omitempty"`
	PushNotifications *bool           `json:"pushNotifications,omitempty"`
	Extensions        json.RawMessage `json:"extensions,omitempty"`
}

type agentSkillV03 struct {
	ID          string                `json:"id"`
	Name        string                `json:"name"`
	Description string                `json:"description"`
	Tags        []string              `json:"tags"`
	Examples    []string              `json:"examples,omitempty"`
	InputModes  []string              `json:"inputModes,omitempty"`
	OutputModes []string              `json:"outputModes,omitempty"`
	Security    []map[string][]string `json:"security,omitempty"`
}

// ToV03 converts a 1.0 card to the 0.3 form, with only the interfaces that speak 0.3: url and
// preferredTransport are the first of them, and additionalInterfaces lists them all, as 0.3
// recommends. Interfaces of other versions are left out, since a 0.3 client would call them in
// 0.3. A card with no 0.3 interface has an empty url: Render refuses to serve it.
func (a AgentCard) ToV03() AgentCardV03 {
	out := AgentCardV03{
		ProtocolVersion: ProtocolVersion03, Name: a.Name, Description: a.Description,
		IconURL: a.IconURL, Version: a.Version, DocumentationURL: a.DocumentationURL,
		Capabilities: capabilitiesV03{
			Streaming: a.Capabilities.Streaming, PushNotifications: a.Capabilities.PushNotifications,
			Extensions: a.Capabilities.Extensions,
		},
		SupportsAuthenticatedExtendedCard: a.Capabilities.ExtendedAgentCard,
		DefaultInputModes:                 a.DefaultInputModes,
		DefaultOutputModes:                a.DefaultOutputModes,
		SecuritySchemes:                   schemesV03(a.SecuritySchemes),
		Security:                          requirementsV03(a.SecurityRequirements),
		Skills:                            make([]agentSkillV03, 0, len(a.Skills)),
		PreferredTransport:                DefaultProtocolBind,
	}
	if a.Provider != nil {
		out.Provider = &providerV03{Organization: a.Provider.Organization, URL: a.Provider.URL}
	}
	for i, iface := range a.interfacesOf(Version03) {
		if i == 0 {
			out.URL, out.PreferredTransport = iface.URL, iface.ProtocolBinding
		}
		out.AdditionalInterfaces = append(out.AdditionalInterfaces, agentInterfaceV03{URL: iface.URL, Transport: iface.ProtocolBinding})
	}
	for _, s := range a.Skills {
		out.Skills = append(out.Skills, agentSkillV03{
			ID: s.ID, Name: s.Name, Description: s.Description, Tags: s.Tags, Examples: s.Examples,
			InputModes: s.InputModes, OutputModes: s.OutputModes, Security: requirementsV03(s.SecurityRequirements),
		})
	}
	return out
}

// schemesV03 turns 1.0 one-of security schemes into OpenAPI-style 0.3 ones. A scheme of a kind
// 0.3 does not know is left out (0.3 cannot express it).
func schemesV03(raw json.RawMessage) map[string]any {
	var in map[string]map[string]map[string]any
	if len(raw) == 0 || json.Unmarshal(raw, &in) != nil || len(in) == 0 {
		return nil
	}
	out := make(map[string]any, len(in))
	for name, wrapper := range in {
		for kind, s := range wrapper {
			v := map[string]any{}
			copyField(v, s, "description", "description")
			switch kind {
			case "httpAuthSecurityScheme":
				v["type"] = "http"
				copyField(v, s, "scheme", "scheme")
				copyField(v, s, "bearerFormat", "bearerFormat")
			case "apiKeySecurityScheme":
				v["type"] = "apiKey"
				copyField(v, s, "location", "in")
				copyField(v, s, "name", "name")
			case "oauth2SecurityScheme":
				v["type"] = "oauth2"
				v["flows"] = flowsV03(s["flows"])
				copyField(v, s, "oauth2MetadataUrl", "oauth2MetadataUrl")
			case "openIdConnectSecurityScheme":
				v["type"] = "openIdConnect"
				copyField(v, s, "openIdConnectUrl", "openIdConnectUrl")
			case "mtlsSecurityScheme":
				v["type"] = "mutualTLS"
			default:
				continue
			}
			out[name] = v
		}
	}
	return out
}

// flowsV03 keeps the flows 0.3 knows, each with the scopes map 0.3 requires; deviceCode and
// pkceRequired are 1.0 only.
func flowsV03(f any) map[string]any {
	out := map[string]any{}
	flows, _ := f.(map[string]any)
	for _, kind := range []string{"authorizationCode", "clientCredentials", "implicit", "password"} {
		flow, ok := flows[kind].(map[string]any)
		if !ok {
			continue
		}
		v := map[string]any{"scopes": map[string]any{}}
		for _, k := range []string{"authorizationUrl", "tokenUrl", "refreshUrl", "scopes"} {
			copyField(v, flow, k, k)
		}
		out[kind] = v
	}
	return out
}

func copyField(dst, src map[string]any, from, to string) {
	if v, ok := src[from]; ok {
		dst[to] = v
	}
}

// requirementsV03 turns [{"schemes": {"x": {"list": [...]}}}] into [{"x": [...]}].
func requirementsV03(raw json.RawMessage) []map[string][]string {
	var in []struct {
		Schemes map[string]struct {
			List []string `json:"list"`
		} `json:"schemes"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &in) != nil {
		return nil
	}
	out := make([]map[string][]string, 0, len(in))
	for _, r := range in {
		m := make(map[string][]string, len(r.Schemes))
		for name, l := range r.Schemes {
			m[name] = l.List
			if m[name] == nil {
				m[name] = []string{}
			}
		}
		out = append(out, m)
	}
	return out
}
