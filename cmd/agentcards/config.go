package main

import (
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/confmap"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/v2"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/cards/delegation"
	"github.com/agentcards/agentcards/cards/liveness"
	"github.com/agentcards/agentcards/cards/search"
	"github.com/agentcards/agentcards/cards/search/semantic"
	"github.com/agentcards/agentcards/cards/webhooks"
	"github.com/agentcards/agentcards/web"
	"github.com/agentcards/agentcards/web/mcp"
	"github.com/agentcards/agentcards/web/outbound"
)

// Config is everything the binary reads: defaults, then the YAML file, then AGENTCARDS_* variables.
type Config struct {
	DataDir  string         `koanf:"dataDir"`
	Server   ServerConfig   `koanf:"server"`
	Database DatabaseConfig `koanf:"database"`
	Auth     AuthConfig     `koanf:"auth"`
	Log      LogConfig      `koanf:"log"`
	Keys     KeysConfig     `koanf:"keys"`
	Search   SearchConfig   `koanf:"search"`
	Outbound OutboundConfig `koanf:"outbound"`
	A2A      A2AConfig      `koanf:"a2a"`
	// Delegation is the guard rails of tasks sent to agents.
	Delegation DelegationConfig `koanf:"delegation"`
	Liveness   LivenessConfig   `koanf:"liveness"`
	Audit      AuditConfig      `koanf:"audit"`
	MCP        MCPConfig        `koanf:"mcp"`
	Webhooks   WebhooksConfig   `koanf:"webhooks"`
}

// WebhooksConfig is how webhook events are delivered (see webhooks.Config and docs/webhooks.md).
type WebhooksConfig struct {
	PollInterval   time.Duration `koanf:"pollInterval"`
	Timeout        time.Duration `koanf:"timeout"`
	MinBackoff     time.Duration `koanf:"minBackoff"`
	MaxBackoff     time.Duration `koanf:"maxBackoff"`
	DisableAfter   time.Duration `koanf:"disableAfter"`
	MaxPerTenant   int           `koanf:"maxPerTenant"`
	KeepDeliveries int           `koanf:"keepDeliveries"`
	Lease          time.Duration `koanf:"lease"`
	Concurrency    int           `koanf:"concurrency"`
}

// MCPConfig is what the MCP door at /mcp serves.
type MCPConfig struct {
	// Toolsets are the toolsets of tools listed (web/mcp.Toolsets, or all).
	Toolsets []string `koanf:"toolsets"`
}

// AuditConfig is how long the audit trail keeps its entries.
type AuditConfig struct {
	// Retention: entries older than it are deleted (hourly); 0 keeps them for good.
	Retention time.Duration `koanf:"retention"`
}

// LivenessConfig is how long a heartbeat keeps a card online, and how agents are probed.
type LivenessConfig struct {
	TTL   time.Duration `koanf:"ttl"`
	Probe ProbeConfig   `koanf:"probe"`
}

// ProbeConfig is liveness.probe: off while interval is 0.
type ProbeConfig struct {
	Interval    time.Duration `koanf:"interval"`
	Failures    int           `koanf:"failures"`
	Timeout     time.Duration `koanf:"timeout"`
	Concurrency int           `koanf:"concurrency"`
	PerTenant   int           `koanf:"perTenant"`
	Path        string        `koanf:"path"`
}

// A2AConfig is how A2A cards are served.
type A2AConfig struct {
	CacheMaxAge time.Duration `koanf:"cacheMaxAge"`
	// RefreshInterval refreshes cards imported by URL from their source on schedule; 0: off.
	RefreshInterval time.Duration `koanf:"refreshInterval"`
}

// SearchConfig chooses how searches are answered.
type SearchConfig struct {
	Index        string        `koanf:"index"`
	PollInterval time.Duration `koanf:"pollInterval"`
	Listen       bool          `koanf:"listen"`
	// FeedRetention is how long change-feed entries are kept.
	FeedRetention time.Duration `koanf:"feedRetention"`
	// WarmWindow and WarmReady: see app.SearchOptions.
	WarmWindow time.Duration `koanf:"warmWindow"`
	WarmReady  bool          `koanf:"warmReady"`
	// BuildOnWrite: see app.SearchOptions.
	BuildOnWrite int `koanf:"buildOnWrite"`
	// SnapshotDir keeps large indexes on disk between runs (see app.SearchOptions): empty is
	// <dataDir>/index, none turns it off.
	SnapshotDir string `koanf:"snapshotDir"`
	// OutageCopyBytes bounds the copy of its cards each loaded index keeps for reads during a
	// database outage, per tenant (see app.SearchOptions); 0 keeps none.
	OutageCopyBytes int64 `koanf:"outageCopyBytes"`
	// MemoryBudget bounds the memory of the loaded indexes (see app.SearchOptions); 0: none.
	MemoryBudget int64 `koanf:"memoryBudget"`
	// Streams bound the live streams of the change feed each replica serves.
	Streams StreamsConfig `koanf:"streams"`
	// Encoder re-ranks the first matches of q searches by a sentence encoder, when its model
	// is given.
	Encoder EncoderConfig `koanf:"encoder"`
}

// EncoderConfig turns on the re-ranking of q searches by a sentence encoder (search.Reranker):
// the directory of its model's files (empty: off), the weight of its cosine, how many of the
// first matches it orders again, and how many card versions' embeddings are kept.
type EncoderConfig struct {
	Model  string  `koanf:"model"`
	Weight float64 `koanf:"weight"`
	Depth  int     `koanf:"depth"`
	Cards  int     `koanf:"cards"`
}

// StreamsConfig bounds the live streams of the change feed (search.StreamLimits): streams open
// per tenant and per replica, and the changes that may wait for one reader.
type StreamsConfig struct {
	PerTenant  int `koanf:"perTenant"`
	PerReplica int `koanf:"perReplica"`
	Buffer     int `koanf:"buffer"`
}

// reranker checks search.encoder, loads the encoder's model and returns its Reranker; nil when
// no model is given.
func (e EncoderConfig) reranker() (*search.Reranker, error) {
	switch {
	case !(e.Weight >= 0 && e.Weight <= 100):
		return nil, fmt.Errorf("search.encoder.weight: %v: want 0 to 100", e.Weight)
	case e.Depth < 1 || e.Depth > search.MaxRerankDepth:
		return nil, fmt.Errorf("search.encoder.depth: %d: want 1 to %d", e.Depth, search.MaxRerankDepth)
	case e.Cards < 1:
		return nil, fmt.Errorf("search.encoder.cards: %d: want at least 1", e.Cards)
	case e.Model == "":
		return nil, nil
	}
	m, err := semantic.Load(e.Model)
	if err != nil {
		return nil, fmt.Errorf("search.encoder.model: %w", err)
	}
	return search.NewReranker(m, e.Weight, e.Depth, e.Cards)
}

// DelegationConfig bounds delegations: the server enforces these whatever the caller asks.
type DelegationConfig struct {
	PublicURL       string        `koanf:"publicUrl"`
	MaxDepth        int           `koanf:"maxDepth"`
	DefaultTimeout  time.Duration `koanf:"defaultTimeout"`
	MaxTimeout      time.Duration `koanf:"maxTimeout"`
	MaxAsyncTimeout time.Duration `koanf:"maxAsyncTimeout"`
	MaxResultBytes  int64         `koanf:"maxResultBytes"`
	BreakerFailures uint32        `koanf:"breakerFailures"`
	BreakerCooldown time.Duration `koanf:"breakerCooldown"`
	RatePerSecond   float64       `koanf:"ratePerSecond"`
	RateBurst       int           `koanf:"rateBurst"`
	SecretKey       string        `koanf:"secretKey"`
	// RecordTask keeps the task text in delegation records, up to RecordTaskBytes of it.
	RecordTask      bool `koanf:"recordTask"`
	RecordTaskBytes int  `koanf:"recordTaskBytes"`
}

// secretKey decodes delegation.secretKey: base64 of 32 bytes, or nil when it is not set.
func (d DelegationConfig) secretKey() ([]byte, error) {
	if d.SecretKey == "" {
		return nil, nil
	}
	k, err := base64.StdEncoding.DecodeString(d.SecretKey)
	if err != nil || len(k) != 32 {
		return nil, errors.New("delegation.secretKey must be the base64 of 32 bytes (openssl rand -base64 32)")
	}
	return k, nil
}

// KeysConfig is the service's own signing keys (A2A card signatures, delegation tokens).
type KeysConfig struct {
	SigningKeyFiles []string `koanf:"signingKeyFiles"`
}

// OutboundConfig is the guard on calls to URLs that users registered.
type OutboundConfig struct {
	Allow   []string      `koanf:"allow"`
	Timeout time.Duration `koanf:"timeout"`
}

// ServerConfig is the HTTP listener.
type ServerConfig struct {
	Addr            string        `koanf:"addr"`
	BodyLimit       int64         `koanf:"bodyLimit"`
	RequestTimeout  time.Duration `koanf:"requestTimeout"`
	TenantCacheTTL  time.Duration `koanf:"tenantCacheTtl"`
	ShutdownTimeout time.Duration `koanf:"shutdownTimeout"`
	// MetricsAddr is where Prometheus metrics are served (/metrics); empty: nowhere.
	MetricsAddr string `koanf:"metricsAddr"`
	// Pprof serves Go's runtime profiles (/debug/pprof/) beside the metrics, on their listener.
	Pprof bool `koanf:"pprof"`
	// GCHeadroom bounds the garbage the heap holds between collections, in bytes (gcpace); 0
	// leaves the Go runtime's pace (GOGC), which the GOGC variable also keeps.
	GCHeadroom int64 `koanf:"gcHeadroom"`
	// MaxJSONDepth bounds how deeply free-form JSON (a card's metadata, a capability's
	// inputSchema, a delegation's context) nests, on every door.
	MaxJSONDepth int `koanf:"maxJsonDepth"`
	// CORSOrigins are the origins of browser pages that may call the API and /mcp; none by
	// default.
	CORSOrigins []string `koanf:"corsOrigins"`
}

// DatabaseConfig selects the database.
type DatabaseConfig struct {
	Driver string `koanf:"driver"`
	DSN    string `koanf:"dsn"`
	// DirectDSN reaches Postgres itself where DSN goes through a pooler in transaction mode:
	// migrations and the change-feed LISTEN need a session of their own (storage.DB.UseDirect).
	DirectDSN string `koanf:"directDsn"`
	Migrate   bool   `koanf:"migrate"`
	// MaxConns is the most connections to a Postgres or MySQL server each replica opens (and
	// keeps idle); 0 is storage's default, 10.
	MaxConns int `koanf:"maxConns"`
}

// AuthConfig is how JWTs are checked and minted.
type AuthConfig struct {
	Algorithm      string        `koanf:"algorithm"`
	Secret         string        `koanf:"secret"`
	SecretFile     string        `koanf:"secretFile"`
	PublicKeyFiles []string      `koanf:"publicKeyFiles"`
	PrivateKeyFile string        `koanf:"privateKeyFile"`
	Issuer         string        `koanf:"issuer"`
	Audience       string        `koanf:"audience"`
	Leeway         time.Duration `koanf:"leeway"`
	PlatformAdmins []string      `koanf:"platformAdmins"`
}

// LogConfig is the log output.
type LogConfig struct {
	Level  string `koanf:"level"`
	Format string `koanf:"format"`
}

// defaults lists every key with its default; a key not listed here is a typo and refused. A
// setting that a package applies itself takes its default from that package (web.Defaults,
// delegation.Defaults, outbound.DefaultTimeout), so each default is written once.
var defaults = map[string]any{
	"dataDir":                    "./data",
	"server.addr":                "127.0.0.1:8080",
	"server.bodyLimit":           web.Defaults.BodyLimit,
	"server.requestTimeout":      web.Defaults.RequestTimeout.String(),
	"server.shutdownTimeout":     "15s",
	"server.tenantCacheTtl":      "250ms",
	"server.metricsAddr":         "127.0.0.1:9464",
	"server.pprof":               false,
	"server.gcHeadroom":          384 << 20,
	"server.maxJsonDepth":        cards.DefaultMaxJSONDepth,
	"database.driver":            "sqlite",
	"database.dsn":               "",
	"database.directDsn":         "",
	"database.migrate":           true,
	"database.maxConns":          0,
	"auth.algorithm":             "HS256",
	"auth.secret":                "",
	"auth.secretFile":            "",
	"auth.publicKeyFiles":        []string{},
	"auth.privateKeyFile":        "",
	"auth.issuer":                "",
	"auth.audience":              "",
	"auth.leeway":                "30s",
	"auth.platformAdmins":        []string{},
	"log.level":                  "info",
	"log.format":                 "text",
	"keys.signingKeyFiles":       []string{},
	"search.index":               "memory",
	"search.pollInterval":        "500ms",
	"search.listen":              true,
	"search.feedRetention":       "24h",
	"search.warmWindow":          "24h",
	"search.warmReady":           false,
	"search.buildOnWrite":        10000,
	"search.snapshotDir":         "",
	"search.outageCopyBytes":     64 << 20,
	"search.memoryBudget":        0,
	"search.streams.perTenant":   search.DefaultStreamLimits.PerTenant,
	"search.streams.perReplica":  search.DefaultStreamLimits.PerReplica,
	"search.streams.buffer":      search.DefaultStreamLimits.Buffer,
	"search.encoder.model":       "",
	"search.encoder.weight":      2.0,
	"search.encoder.depth":       20,
	"search.encoder.cards":       100000,
	"server.corsOrigins":         []string{},
	"outbound.allow":             []string{},
	"outbound.timeout":           outbound.DefaultTimeout.String(),
	"a2a.cacheMaxAge":            web.Defaults.A2ACacheMaxAge.String(),
	"a2a.refreshInterval":        "0s",
	"delegation.publicUrl":       "",
	"delegation.maxDepth":        delegation.Defaults.MaxDepth,
	"delegation.defaultTimeout":  delegation.Defaults.DefaultTimeout.String(),
	"delegation.maxTimeout":      delegation.Defaults.MaxTimeout.String(),
	"delegation.maxAsyncTimeout": delegation.Defaults.MaxAsyncTimeout.String(),
	"delegation.maxResultBytes":  delegation.Defaults.MaxResultBytes,
	"delegation.breakerFailures": delegation.Defaults.BreakerFailures,
	"delegation.breakerCooldown": delegation.Defaults.BreakerCooldown.String(),
	"delegation.ratePerSecond":   delegation.Defaults.RatePerSecond,
	"delegation.rateBurst":       delegation.Defaults.RateBurst,
	"delegation.secretKey":       "",
	"delegation.recordTask":      true,
	"delegation.recordTaskBytes": delegation.Defaults.RecordTaskBytes,
	"liveness.ttl":               liveness.DefaultTTL.String(),
	"liveness.probe.interval":    "0s",
	"liveness.probe.failures":    liveness.ProbeDefaults.Failures,
	"liveness.probe.timeout":     liveness.ProbeDefaults.Timeout.String(),
	"liveness.probe.concurrency": liveness.ProbeDefaults.Concurrency,
	"liveness.probe.perTenant":   liveness.ProbeDefaults.PerTenant,
	"liveness.probe.path":        "",
	"audit.retention":            "2160h",
	"mcp.toolsets":               mcp.DefaultToolsets,
	"webhooks.pollInterval":      webhooks.Defaults.PollInterval.String(),
	"webhooks.timeout":           webhooks.Defaults.Timeout.String(),
	"webhooks.minBackoff":        webhooks.Defaults.MinBackoff.String(),
	"webhooks.maxBackoff":        webhooks.Defaults.MaxBackoff.String(),
	"webhooks.disableAfter":      webhooks.Defaults.DisableAfter.String(),
	"webhooks.maxPerTenant":      webhooks.Defaults.MaxPerTenant,
	"webhooks.keepDeliveries":    webhooks.Defaults.KeepDeliveries,
	"webhooks.lease":             webhooks.Defaults.Lease.String(),
	"webhooks.concurrency":       webhooks.Defaults.Concurrency,
}

// envName turns a key such as "server.bodyLimit" into AGENTCARDS_SERVER_BODY_LIMIT.
func envName(key string) string {
	var b strings.Builder
	b.WriteString("AGENTCARDS_")
	for i, r := range key {
		switch {
		case r == '.':
			b.WriteByte('_')
		case unicode.IsUpper(r) && i > 0 && key[i-1] != '.':
			b.WriteByte('_')
			b.WriteRune(r)
		default:
			b.WriteRune(unicode.ToUpper(r))
		}
	}
	return b.String()
}

// loadConfig reads defaults, then path (or ./config.yaml when path is empty and it exists), then
// the environment: AGENTCARDS_<KEY>, or AGENTCARDS_<KEY>_FILE naming a file that holds the value
// (for secrets mounted as files).
func loadConfig(path string, getenv func(string) string) (Config, error) {
	k := koanf.New(".")
	if err := k.Load(confmap.Provider(defaults, "."), nil); err != nil {
		return Config{}, err
	}
	if path == "" {
		if _, err := os.Stat("config.yaml"); err == nil {
			path = "config.yaml"
		}
	}
	var durationErrs []error
	if path != "" {
		fk := koanf.New(".")
		if err := fk.Load(file.Provider(path), yaml.Parser()); err != nil {
			return Config{}, fmt.Errorf("config %s: %w", path, err)
		}
		for _, key := range fk.Keys() {
			if _, ok := defaults[key]; !ok {
				return Config{}, fmt.Errorf("config %s: unknown key %q", path, key)
			}
			if durationKeys[key] {
				if err := checkDuration(key, fk.Get(key)); err != nil {
					durationErrs = append(durationErrs, fmt.Errorf("config %s: %w", path, err))
				}
			}
		}
		if err := k.Merge(fk); err != nil {
			return Config{}, err
		}
	}
	for _, key := range slices.Sorted(maps.Keys(defaults)) {
		def, name := defaults[key], envName(key)
		val, set := getenv(name), getenv(name) != ""
		if fileName := getenv(name + "_FILE"); fileName != "" {
			b, err := os.ReadFile(fileName)
			if err != nil {
				return Config{}, fmt.Errorf("%s_FILE: %w", name, err)
			}
			val, set = strings.TrimRight(string(b), "\r\n"), true
		}
		if !set {
			continue
		}
		if durationKeys[key] {
			if err := checkDuration(key, val); err != nil {
				durationErrs = append(durationErrs, fmt.Errorf("%s: %w", name, err))
				continue
			}
		}
		var v any = val
		if _, isList := def.([]string); isList {
			v = splitList(val)
		}
		if err := k.Set(key, v); err != nil {
			return Config{}, err
		}
	}
	if len(durationErrs) > 0 {
		return Config{}, errors.Join(durationErrs...)
	}
	var cfg Config
	if err := k.UnmarshalWithConf("", &cfg, koanf.UnmarshalConf{Tag: "koanf"}); err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	return cfg, cfg.check()
}

// fieldKeys maps every key of t (a struct with koanf tags, as Config) to its Go type.
func fieldKeys(t reflect.Type, prefix string, out map[string]reflect.Type) map[string]reflect.Type {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("koanf")
		if tag == "" {
			continue
		}
		if f.Type.Kind() == reflect.Struct {
			fieldKeys(f.Type, prefix+tag+".", out)
			continue
		}
		out[prefix+tag] = f.Type
	}
	return out
}

// durationKeys are the keys of Config fields typed time.Duration, found by reflection so that a
// new duration key is checked without being listed anywhere.
var durationKeys = func() map[string]bool {
	keys := map[string]bool{}
	for key, t := range fieldKeys(reflect.TypeFor[Config](), "", map[string]reflect.Type{}) {
		if t == reflect.TypeFor[time.Duration]() {
			keys[key] = true
		}
	}
	return keys
}()

// checkDuration refuses a duration without a unit, which would otherwise be taken as
// nanoseconds: a YAML number, or a string that is a bare number. "0" is the one bare number
// allowed, being zero in every unit; check says which keys may be zero.
func checkDuration(key string, v any) error {
	s, isString := v.(string)
	switch v.(type) {
	case string:
	case int, int64, uint64, float64:
		s = fmt.Sprint(v)
	default:
		return fmt.Errorf("%s: %v is not a duration; write e.g. 30s, 500ms, 2m or 1h", key, v)
	}
	s = strings.TrimSpace(s)
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		if s == "0" {
			return nil
		}
		return fmt.Errorf("%s: %s has no unit; write e.g. %ss or %sms (units: ns, us, ms, s, m, h)", key, s, s, s)
	}
	if !isString {
		return fmt.Errorf("%s: %v is not a duration; write e.g. 30s, 500ms, 2m or 1h", key, v)
	}
	if _, err := time.ParseDuration(s); err != nil {
		return fmt.Errorf("%s: %q is not a duration; write e.g. 30s, 500ms, 2m or 1h", key, s)
	}
	return nil
}

// envIgnoredPrefixes are AGENTCARDS_ variables that are not configuration: the test and benchmark
// tooling's own, set in the same environment.
var envIgnoredPrefixes = []string{"AGENTCARDS_TEST_", "AGENTCARDS_BENCH_"}

// strayEnv is an AGENTCARDS_ variable that names no key, with the nearest variable that does
// ("" when none is close).
type strayEnv struct{ Name, Suggestion string }

// unknownEnv returns the AGENTCARDS_* variables of environ ("NAME=value" entries, as os.Environ)
// that name no key, neither NAME nor NAME_FILE, sorted; loadConfig ignores them, serve warns.
func unknownEnv(environ []string) []strayEnv {
	known := map[string]bool{}
	for key := range defaults {
		known[envName(key)], known[envName(key)+"_FILE"] = true, true
	}
	var out []strayEnv
	seen := map[string]bool{}
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "AGENTCARDS_") || known[name] || seen[name] ||
			slices.ContainsFunc(envIgnoredPrefixes, func(p string) bool { return strings.HasPrefix(name, p) }) {
			continue
		}
		seen[name] = true
		s := strayEnv{Name: name}
		best := 3 // suggest only names at most two edits away
		for _, k := range slices.Sorted(maps.Keys(known)) {
			if d := editDistance(name, k); d < best {
				s.Suggestion, best = k, d
			}
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b strayEnv) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// editDistance is the Levenshtein distance of a and b, in bytes.
func editDistance(a, b string) int {
	prev, cur := make([]int, len(b)+1), make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if p := strings.TrimSpace(part); p != "" {
			out = append(out, p)
		}
	}
	return out
}
