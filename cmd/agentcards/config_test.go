package main

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/v2"

	"github.com/agentcards/agentcards/authz"
	"github.com/agentcards/agentcards/authz/token"
	"github.com/agentcards/agentcards/cards"
)

func TestEnvName(t *testing.T) {
	for key, want := range map[string]string{
		"database.dsn":        "AGENTCARDS_DATABASE_DSN",
		"server.bodyLimit":    "AGENTCARDS_SERVER_BODY_LIMIT",
		"dataDir":             "AGENTCARDS_DATA_DIR",
		"auth.platformAdmins": "AGENTCARDS_AUTH_PLATFORM_ADMINS",
	} {
		if got := envName(key); got != want {
			t.Errorf("envName(%q) = %q, want %q", key, got, want)
		}
	}
}

func TestLoadConfigLayers(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	cfg, err := loadConfig("", func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server.Addr != "127.0.0.1:8080" || cfg.Database.Driver != "sqlite" || cfg.Database.DSN != filepath.Join("data", "agentcards.db") ||
		!cfg.Database.Migrate || cfg.Server.BodyLimit != 1<<20 || cfg.Server.RequestTimeout != 30*time.Second || cfg.Auth.Algorithm != "HS256" {
		t.Fatalf("defaults %+v", cfg)
	}

	yaml := "server:\n  addr: 127.0.0.1:9999\n  bodyLimit: 2048\ndatabase:\n  migrate: false\nauth:\n  platformAdmins: [ops]\n"
	if err := os.WriteFile("config.yaml", []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	secretFile := filepath.Join(dir, "dsn.txt")
	if err := os.WriteFile(secretFile, []byte("postgres://u:p@127.0.0.1/db\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"AGENTCARDS_SERVER_ADDR":          "127.0.0.1:7777",
		"AGENTCARDS_DATABASE_DRIVER":      "postgres",
		"AGENTCARDS_DATABASE_DSN_FILE":    secretFile,
		"AGENTCARDS_AUTH_PLATFORM_ADMINS": "ops, root",
		"AGENTCARDS_AUTH_LEEWAY":          "5s",
	}
	cfg, err = loadConfig("", func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server.Addr != "127.0.0.1:7777" || cfg.Server.BodyLimit != 2048 || cfg.Database.Migrate ||
		cfg.Database.DSN != "postgres://u:p@127.0.0.1/db" || cfg.Auth.Leeway != 5*time.Second ||
		strings.Join(cfg.Auth.PlatformAdmins, ",") != "ops,root" {
		t.Fatalf("layered %+v", cfg)
	}

	if err := os.WriteFile("typo.yaml", []byte("server:\n  adr: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadConfig("typo.yaml", func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), "server.adr") {
		t.Fatalf("unknown key: %v", err)
	}
	if _, err := loadConfig("", func(k string) string {
		return map[string]string{"AGENTCARDS_DATABASE_DRIVER": "oracle"}[k]
	}); err == nil {
		t.Fatal("bad driver accepted")
	}
	if cfg.Server.TenantCacheTTL != 250*time.Millisecond {
		t.Fatalf("server.tenantCacheTtl default %s", cfg.Server.TenantCacheTTL)
	}
	for _, ttl := range []string{"-1ms", "501ms", "1s"} {
		if _, err := loadConfig("", func(k string) string {
			return map[string]string{"AGENTCARDS_SERVER_TENANT_CACHE_TTL": ttl}[k]
		}); err == nil || !strings.Contains(err.Error(), "server.tenantCacheTtl") {
			t.Fatalf("server.tenantCacheTtl %s: %v", ttl, err)
		}
	}
	if cfg, err := loadConfig("", func(k string) string {
		return map[string]string{"AGENTCARDS_SERVER_TENANT_CACHE_TTL": "0s"}[k]
	}); err != nil || cfg.Server.TenantCacheTTL != 0 {
		t.Fatalf("server.tenantCacheTtl 0: %v %v", cfg.Server.TenantCacheTTL, err)
	}
}

func TestGeneratedSecretIsStableAndPrivate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", secretFileName)
	a, err := loadOrCreateSecret(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := loadOrCreateSecret(path)
	if err != nil || a != b || len(a) < 32 {
		t.Fatalf("secret not reused: %q %q %v", a, b, err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v %v", st.Mode(), err)
	}
}

// TestExampleConfigDocumentsEveryKey keeps config.example.yaml true: it loads, and it names every
// key the binary knows.
func TestExampleConfigDocumentsEveryKey(t *testing.T) {
	if _, err := loadConfig("../../config.example.yaml", func(string) string { return "" }); err != nil {
		t.Fatal(err)
	}
	fk := koanf.New(".")
	if err := fk.Load(file.Provider("../../config.example.yaml"), yaml.Parser()); err != nil {
		t.Fatal(err)
	}
	for key := range defaults {
		if !fk.Exists(key) {
			t.Errorf("config.example.yaml does not document %q", key)
		}
	}
	readme, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	for key := range defaults {
		if !strings.Contains(string(readme), "`"+key+"`") {
			t.Errorf("the configuration table of docs/configuration.md does not name %q", key)
		}
	}
}

// TestConfigStructMatchesDefaults keeps the defaults map and the Config struct naming the same
// keys, so that reflecting over Config finds every duration key.
func TestConfigStructMatchesDefaults(t *testing.T) {
	fields := fieldKeys(reflect.TypeFor[Config](), "", map[string]reflect.Type{})
	for key := range defaults {
		if _, ok := fields[key]; !ok {
			t.Errorf("defaults names %q, which no Config field has", key)
		}
	}
	for key := range fields {
		if _, ok := defaults[key]; !ok {
			t.Errorf("Config has %q, which defaults does not name", key)
		}
	}
	if len(durationKeys) < 10 || !durationKeys["server.requestTimeout"] || !durationKeys["delegation.breakerCooldown"] {
		t.Fatalf("duration keys %v", durationKeys)
	}
	for key := range durationKeys {
		if err := checkDuration(key, defaults[key]); err != nil {
			t.Errorf("default: %v", err)
		}
	}
}

// yamlFor writes key (dotted) with the raw YAML value as a nested document.
func yamlFor(key, value string) string {
	var b strings.Builder
	for i, part := range strings.Split(key, ".") {
		b.WriteString("\n" + strings.Repeat("  ", i) + part + ":")
	}
	return b.String() + " " + value + "\n"
}

func TestDurationsNeedAUnit(t *testing.T) {
	t.Chdir(t.TempDir())
	noEnv := func(string) string { return "" }
	for key := range durationKeys {
		name := envName(key)
		for _, bare := range []string{"30", "1.5", "-2"} {
			if err := os.WriteFile("c.yaml", []byte(yamlFor(key, bare)), 0o600); err != nil {
				t.Fatal(err)
			}
			want := key + ": " + bare + " has no unit; write e.g. " + bare + "s"
			if _, err := loadConfig("c.yaml", noEnv); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "c.yaml") {
				t.Errorf("file %s: %s: %v", key, bare, err)
			}
			if _, err := loadConfig("", func(k string) string { return map[string]string{name: bare}[k] }); err == nil ||
				!strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), name) {
				t.Errorf("env %s=%s: %v", name, bare, err)
			}
			if _, err := loadConfig("", func(k string) string { return map[string]string{name: `"` + bare + `"`}[k] }); err == nil {
				t.Errorf("env %s=%q accepted", name, bare)
			}
		}
		if err := os.WriteFile("c.yaml", []byte(yamlFor(key, `"30"`)), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := loadConfig("c.yaml", noEnv); err == nil || !strings.Contains(err.Error(), key+": 30 has no unit") {
			t.Errorf("file %s: quoted 30: %v", key, err)
		}
		for _, bad := range []string{"abc", "[1s]", "true"} {
			if err := os.WriteFile("c.yaml", []byte(yamlFor(key, bad)), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := loadConfig("c.yaml", noEnv); err == nil || !strings.Contains(err.Error(), key+": ") || !strings.Contains(err.Error(), "not a duration") {
				t.Errorf("file %s: %s: %v", key, bad, err)
			}
		}
	}
	// Both errors are reported at once.
	if _, err := loadConfig("", func(k string) string {
		return map[string]string{"AGENTCARDS_SERVER_REQUEST_TIMEOUT": "30", "AGENTCARDS_AUTH_LEEWAY": "5"}[k]
	}); err == nil || !strings.Contains(err.Error(), "server.requestTimeout: 30 has no unit") || !strings.Contains(err.Error(), "auth.leeway: 5 has no unit") {
		t.Fatalf("two unitless durations: %v", err)
	}
	// A bare 0 is zero in any unit: taken where zero means something, refused by the range check elsewhere.
	if err := os.WriteFile("c.yaml", []byte("server:\n  tenantCacheTtl: 0\nauth:\n  leeway: 0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if cfg, err := loadConfig("c.yaml", noEnv); err != nil || cfg.Server.TenantCacheTTL != 0 || cfg.Auth.Leeway != 0 {
		t.Fatalf("zero ttl and leeway: %+v %v", cfg, err)
	}
	if cfg, err := loadConfig("", func(k string) string {
		return map[string]string{"AGENTCARDS_SERVER_TENANT_CACHE_TTL": "0", "AGENTCARDS_AUTH_LEEWAY": "0"}[k]
	}); err != nil || cfg.Server.TenantCacheTTL != 0 || cfg.Auth.Leeway != 0 {
		t.Fatalf("zero ttl and leeway from the environment: %+v %v", cfg, err)
	}
	if _, err := loadConfig("", func(k string) string {
		return map[string]string{"AGENTCARDS_SERVER_REQUEST_TIMEOUT": "0"}[k]
	}); err == nil || !strings.Contains(err.Error(), "server.requestTimeout") {
		t.Fatalf("zero request timeout: %v", err)
	}
	if err := os.WriteFile("c.yaml", []byte("server:\n  requestTimeout: 1m30s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if cfg, err := loadConfig("c.yaml", noEnv); err != nil || cfg.Server.RequestTimeout != 90*time.Second {
		t.Fatalf("1m30s: %v %v", cfg.Server.RequestTimeout, err)
	}
	// The server refuses to start.
	var stdout, stderr strings.Builder
	if err := run(t.Context(), []string{"serve"}, &stdout, &stderr, []string{"AGENTCARDS_SERVER_REQUEST_TIMEOUT=30"}); err == nil ||
		!strings.Contains(err.Error(), "server.requestTimeout: 30 has no unit; write e.g. 30s") {
		t.Fatalf("serve with a unitless request timeout: %v", err)
	}
	if _, err := os.Stat("data"); !os.IsNotExist(err) {
		t.Fatalf("serve refused its config but created ./data: %v", err)
	}
}

func TestLogLevel(t *testing.T) {
	t.Chdir(t.TempDir())
	for level, want := range map[string]slog.Level{"debug": slog.LevelDebug, "INFO": slog.LevelInfo, "Warn": slog.LevelWarn, "error": slog.LevelError} {
		cfg, err := loadConfig("", func(k string) string { return map[string]string{"AGENTCARDS_LOG_LEVEL": level}[k] })
		if err != nil {
			t.Fatalf("%s: %v", level, err)
		}
		if log := newLogger(cfg.Log, io.Discard); !log.Enabled(t.Context(), want) || log.Enabled(t.Context(), want-1) {
			t.Fatalf("%s: not logging from %v", level, want)
		}
	}
	for _, level := range []string{"verbose", "warning", "info+2", " "} {
		if _, err := loadConfig("", func(k string) string { return map[string]string{"AGENTCARDS_LOG_LEVEL": level}[k] }); err == nil ||
			!strings.Contains(err.Error(), "log.level") || !strings.Contains(err.Error(), "debug, info, warn or error") {
			t.Fatalf("log.level %q: %v", level, err)
		}
	}
}

func TestUnknownEnv(t *testing.T) {
	got := unknownEnv([]string{
		"PATH=/bin",
		"AGENTCARDS_SERVER_ADDR=127.0.0.1:0", "AGENTCARDS_SERVER_METRICS_ADDR=127.0.0.1:0",
		"AGENTCARDS_SERVER_ADRR=127.0.0.1:1",
		"AGENTCARDS_SERVER_ADRR=again",
		"AGENTCARDS_AUTH_SECRET_FILE=/run/secrets/jwt",
		"AGENTCARDS_DATABASE_DSN_FILES=/x",
		"AGENTCARDS_TEST_POSTGRES_DSN=postgres://",
		"AGENTCARDS_BENCH_CARDS=1000",
		"AGENTCARDS_COMPLETELY_DIFFERENT=",
		"AGENTCARDS_LOG_LEVEL",
	})
	want := []strayEnv{
		{Name: "AGENTCARDS_COMPLETELY_DIFFERENT"},
		{Name: "AGENTCARDS_DATABASE_DSN_FILES", Suggestion: "AGENTCARDS_DATABASE_DSN_FILE"},
		{Name: "AGENTCARDS_SERVER_ADRR", Suggestion: "AGENTCARDS_SERVER_ADDR"},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("unknownEnv = %+v, want %+v", got, want)
	}
	if got := unknownEnv(nil); len(got) != 0 {
		t.Fatalf("no environment: %v", got)
	}
}

func TestTokenCommand(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	mint := func(environ []string, args ...string) (string, error) {
		var stdout, stderr strings.Builder
		err := run(t.Context(), append([]string{"token"}, args...), &stdout, &stderr, environ)
		return strings.TrimSpace(stdout.String()), err
	}
	// Where the server never ran there is no secret: refuse, say where we looked, create nothing.
	if _, err := mint(nil, "--subject", "root", "--platform-admin"); err == nil ||
		!strings.Contains(err.Error(), filepath.Join(dir, "data", "jwt-secret")) ||
		!strings.Contains(err.Error(), "directory the server runs in") || !strings.Contains(err.Error(), "auth.secret") {
		t.Fatalf("token without a secret: %v", err)
	}
	other := filepath.Join(dir, "elsewhere")
	if _, err := mint([]string{"AGENTCARDS_DATA_DIR=" + other}, "--subject", "root", "--platform-admin"); err == nil ||
		!strings.Contains(err.Error(), filepath.Join(other, "jwt-secret")) {
		t.Fatalf("token without a secret in dataDir: %v", err)
	}
	for _, p := range []string{"data", other} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Fatalf("token created %s: %v", p, err)
		}
	}

	// With the secret serve generated, tokens verify against it.
	secret, err := loadOrCreateSecret(filepath.Join("data", secretFileName))
	if err != nil {
		t.Fatal(err)
	}
	verify := func(raw, secret string) authz.Principal {
		t.Helper()
		tokens, err := token.NewTokens(token.Config{Algorithm: "HS256", Secret: []byte(secret)})
		if err != nil {
			t.Fatal(err)
		}
		p, err := tokens.Verify(raw)
		if err != nil {
			t.Fatalf("verify: %v", err)
		}
		return p
	}
	raw, err := mint(nil, "--subject", "root", "--platform-admin")
	if err != nil {
		t.Fatal(err)
	}
	if p := verify(raw, secret); p.Subject != "root" || !p.PlatformAdmin || p.Tenant != "" {
		t.Fatalf("platform admin token: %+v", p)
	}
	raw, err = mint(nil, "--subject", "alice", "--tenant", "acme")
	if err != nil {
		t.Fatal(err)
	}
	if p := verify(raw, secret); p.Subject != "alice" || p.PlatformAdmin || p.Tenant != "acme" {
		t.Fatalf("tenant token: %+v", p)
	}
	// Both flags together stay allowed.
	raw, err = mint(nil, "--subject", "ops", "--tenant", "acme", "--platform-admin")
	if err != nil {
		t.Fatal(err)
	}
	if p := verify(raw, secret); p.Subject != "ops" || !p.PlatformAdmin || p.Tenant != "acme" {
		t.Fatalf("platform admin token naming a tenant: %+v", p)
	}
	for _, bad := range []string{"No Such", "Acme", "-acme", "acme/x", strings.Repeat("a", 64)} {
		if _, err := mint(nil, "--subject", "alice", "--tenant", bad); err == nil || !strings.Contains(err.Error(), "--tenant") {
			t.Fatalf("--tenant %q: %v", bad, err)
		}
	}
	if _, err := mint(nil, "--subject", "alice"); err == nil {
		t.Fatal("a token with neither --tenant nor --platform-admin")
	}

	// A configured secret needs no data directory, and creates none.
	t.Chdir(t.TempDir())
	configured := strings.Repeat("s", 32)
	raw, err = mint([]string{"AGENTCARDS_AUTH_SECRET=" + configured}, "--subject", "root", "--platform-admin")
	if err != nil {
		t.Fatal(err)
	}
	if p := verify(raw, configured); p.Subject != "root" {
		t.Fatalf("configured secret: %+v", p)
	}
	if _, err := os.Stat("data"); !os.IsNotExist(err) {
		t.Fatalf("token created ./data: %v", err)
	}
}

// TestRecordTaskConfig: delegation records keep 4,096 bytes of the task by default; with
// delegation.recordTask off they keep none (recordTaskBytes 0 accepted then), and a bound of 0
// with it on is refused. The outage copy is on, 64 MiB, and a negative bound is refused.
func TestRecordTaskConfig(t *testing.T) {
	t.Chdir(t.TempDir())
	load := func(env map[string]string) (Config, error) {
		return loadConfig("", func(k string) string { return env[k] })
	}
	cfg, err := load(nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := recordTaskBytes(cfg.Delegation); n != 4096 || cfg.Search.OutageCopyBytes != 64<<20 {
		t.Fatalf("defaults: record %d bytes of a task, outage copy %d", n, cfg.Search.OutageCopyBytes)
	}
	cfg, err = load(map[string]string{"AGENTCARDS_DELEGATION_RECORD_TASK": "false", "AGENTCARDS_DELEGATION_RECORD_TASK_BYTES": "0"})
	if err != nil || recordTaskBytes(cfg.Delegation) != 0 {
		t.Fatalf("recordTask off: %v, %d bytes", err, recordTaskBytes(cfg.Delegation))
	}
	if _, err := load(map[string]string{"AGENTCARDS_DELEGATION_RECORD_TASK_BYTES": "0"}); err == nil || !strings.Contains(err.Error(), "recordTaskBytes") {
		t.Fatalf("recordTaskBytes 0 with recordTask on: %v", err)
	}
	if _, err := load(map[string]string{"AGENTCARDS_SEARCH_OUTAGE_COPY_BYTES": "-1"}); err == nil || !strings.Contains(err.Error(), "search.outageCopyBytes") {
		t.Fatalf("a negative outage copy: %v", err)
	}
}

// TestMaxJSONDepthConfig: free-form JSON may nest cards.DefaultMaxJSONDepth levels by default;
// server.maxJsonDepth takes any bound from 8 to 10,000 and refuses one outside, naming itself.
func TestMaxJSONDepthConfig(t *testing.T) {
	t.Chdir(t.TempDir())
	load := func(depth string) (Config, error) {
		return loadConfig("", func(k string) string {
			return map[string]string{"AGENTCARDS_SERVER_MAX_JSON_DEPTH": depth}[k]
		})
	}
	cfg, err := load("")
	if err != nil || cfg.Server.MaxJSONDepth != cards.DefaultMaxJSONDepth {
		t.Fatalf("default: %d, %v", cfg.Server.MaxJSONDepth, err)
	}
	for _, ok := range []int{8, 32, 10000} {
		if cfg, err := load(strconv.Itoa(ok)); err != nil || cfg.Server.MaxJSONDepth != ok {
			t.Fatalf("server.maxJsonDepth %d: %d, %v", ok, cfg.Server.MaxJSONDepth, err)
		}
	}
	for _, bad := range []string{"0", "7", "-1", "10001"} {
		if _, err := load(bad); err == nil || !strings.Contains(err.Error(), "server.maxJsonDepth") {
			t.Fatalf("server.maxJsonDepth %s: %v", bad, err)
		}
	}
}
