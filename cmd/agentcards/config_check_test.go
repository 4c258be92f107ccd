package main

import (
	"encoding/base64"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// env returns a getenv over vars, for loadConfig.
func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// TestConfigRanges: every key that check bounds or restricts to a set, with a value just inside
// (accepted, alone) and one just outside (refused, with an error naming the key). Each row sets
// one variable over the defaults, plus what the row's key needs to be valid at all (with).
func TestConfigRanges(t *testing.T) {
	t.Chdir(t.TempDir()) // no ./config.yaml
	key32 := base64.StdEncoding.EncodeToString(make([]byte, 32))
	key31 := base64.StdEncoding.EncodeToString(make([]byte, 31))
	for _, c := range []struct {
		key             string // the configuration key; its variable is envName(key)
		inside, outside string
		want            string // in the error of outside
		with            map[string]string
	}{
		{key: "database.driver", inside: "mysql", outside: "oracle", want: `database.driver "oracle" must be sqlite, postgres or mysql`,
			with: map[string]string{"AGENTCARDS_DATABASE_DSN": "u:p@tcp(127.0.0.1:3306)/db"}},
		{key: "database.driver", inside: "sqlite", outside: "SQLite", want: `database.driver "SQLite"`},
		{key: "database.dsn", inside: "postgres://u@127.0.0.1/db", outside: "", want: "database.dsn is required for postgres",
			with: map[string]string{"AGENTCARDS_DATABASE_DRIVER": "postgres"}},
		{key: "database.maxConns", inside: "24", outside: "-1", want: "database.maxConns -1 must be 0 (the default) or more",
			with: map[string]string{"AGENTCARDS_DATABASE_DRIVER": "postgres", "AGENTCARDS_DATABASE_DSN": "postgres://u@127.0.0.1/db"}},
		{key: "database.maxConns", inside: "0", outside: "1", want: "database.maxConns applies to postgres and mysql"},
		{key: "database.directDsn", inside: "", outside: "postgres://u@127.0.0.1:5432/db", want: "database.directDsn applies to postgres",
			with: map[string]string{"AGENTCARDS_DATABASE_DRIVER": "mysql", "AGENTCARDS_DATABASE_DSN": "u:p@tcp(127.0.0.1:3306)/db"}},
		{key: "server.bodyLimit", inside: "1", outside: "0", want: "server.bodyLimit must be positive"},
		{key: "server.requestTimeout", inside: "1ns", outside: "0", want: "server.requestTimeout and server.shutdownTimeout must be positive"},
		{key: "server.shutdownTimeout", inside: "1ns", outside: "0", want: "server.requestTimeout and server.shutdownTimeout must be positive"},
		{key: "server.tenantCacheTtl", inside: "500ms", outside: "500.001ms", want: "server.tenantCacheTtl must be between 0 and 500ms"},
		{key: "server.tenantCacheTtl", inside: "0", outside: "-1ns", want: "server.tenantCacheTtl must be between 0 and 500ms"},
		{key: "server.gcHeadroom", inside: "0", outside: "-1", want: "server.gcHeadroom must not be negative"},
		{key: "server.corsOrigins", inside: "https://app.example, http://localhost:3000", outside: "*", want: `server.corsOrigins: origin "*" is not scheme://host[:port]`},
		{key: "server.corsOrigins", inside: "https://app.example/", outside: "https://app.example/console", want: "server.corsOrigins: origin"},
		{key: "auth.leeway", inside: "5m", outside: "5m1ns", want: "auth.leeway must be between 0 and 5m"},
		{key: "auth.leeway", inside: "0", outside: "-1ns", want: "auth.leeway must be between 0 and 5m"},
		{key: "search.index", inside: "none", outside: "None", want: `search.index "None" must be memory or none`},
		{key: "search.index", inside: "memory", outside: "bleve", want: `search.index "bleve" must be memory or none`},
		{key: "search.feedRetention", inside: "1h", outside: "59m59.999999999s", want: "search.feedRetention must be at least 1h"},
		{key: "audit.retention", inside: "1h", outside: "59m59.999999999s", want: "audit.retention must be 0 (keep for good) or at least 1h"},
		{key: "audit.retention", inside: "0", outside: "-1ns", want: "audit.retention must be 0 (keep for good) or at least 1h"},
		{key: "search.pollInterval", inside: "10ms", outside: "9.999999ms", want: "search.pollInterval must be at least 10ms"},
		{key: "search.streams.perTenant", inside: "1", outside: "0", want: "search.streams.perTenant must be at least 1"},
		{key: "search.streams.buffer", inside: "1", outside: "0", want: "search.streams.buffer must be at least 1"},
		{key: "search.listen", inside: "false", outside: "maybe", want: "'search.listen' cannot parse value as 'bool'"},
		{key: "outbound.timeout", inside: "1ns", outside: "0", want: "outbound.timeout must be positive"},
		{key: "outbound.allow", inside: "10.0.0.0/8, ::1, 192.168.1.7", outside: "10.0.0.0/33", want: `outbound.allow: "10.0.0.0/33" is neither an address nor a CIDR prefix`},
		{key: "a2a.cacheMaxAge", inside: "1ns", outside: "0", want: "a2a.cacheMaxAge must be positive"},
		{key: "delegation.maxDepth", inside: "1", outside: "0", want: "delegation: maxDepth"},
		{key: "delegation.defaultTimeout", inside: "1ns", outside: "0", want: "delegation: maxDepth"},
		// maxTimeout's bound is defaultTimeout (30s by default).
		{key: "delegation.maxTimeout", inside: "30s", outside: "29.999999999s", want: "maxTimeout at least defaultTimeout"},
		// maxAsyncTimeout's bound is maxTimeout (2m by default).
		{key: "delegation.maxAsyncTimeout", inside: "2m", outside: "1m59s", want: "maxAsyncTimeout at least maxTimeout"},
		{key: "delegation.maxResultBytes", inside: "1", outside: "0", want: "delegation: maxDepth"},
		{key: "delegation.breakerFailures", inside: "1", outside: "0", want: "delegation: maxDepth"},
		{key: "delegation.breakerCooldown", inside: "1ns", outside: "0", want: "delegation: maxDepth"},
		{key: "delegation.ratePerSecond", inside: "0", outside: "-0.001", want: "ratePerSecond not negative"},
		{key: "delegation.rateBurst", inside: "1", outside: "0", want: "delegation: maxDepth"},
		{key: "delegation.secretKey", inside: key32, outside: key31, want: "delegation.secretKey must be the base64 of 32 bytes"},
		{key: "delegation.secretKey", inside: key32, outside: "not base64!", want: "delegation.secretKey must be the base64 of 32 bytes"},
		{key: "delegation.publicUrl", inside: "https://agents.example.com/base", outside: "ftp://agents.example.com", want: `delegation.publicUrl "ftp://agents.example.com" must be an http(s) URL`},
		{key: "delegation.publicUrl", inside: "http://127.0.0.1:8080", outside: "agents.example.com", want: "must be an http(s) URL"},
		{key: "liveness.ttl", inside: "1s", outside: "999ms", want: "liveness.ttl must be at least 1s"},
		// With probes every 30s (timeout 5s), the TTL must span 1.5 intervals and a timeout.
		{key: "liveness.ttl", inside: "50s", outside: "49.999s", want: "liveness.ttl (49.999s) must be at least 1.5 × liveness.probe.interval",
			with: map[string]string{"AGENTCARDS_LIVENESS_PROBE_INTERVAL": "30s"}},
		{key: "liveness.probe.interval", inside: "1s", outside: "999ms", want: "liveness.probe.interval must be 0 (off) or at least 1s"},
		{key: "liveness.probe.failures", inside: "1", outside: "0", want: "liveness.probe.failures, concurrency and perTenant must be at least 1"},
		{key: "liveness.probe.path", inside: "/health", outside: "health", want: "liveness.probe.path must be a path starting with /"},
		{key: "a2a.refreshInterval", inside: "1m", outside: "59s", want: "a2a.refreshInterval must be 0 (off) or at least 1m"},
		{key: "log.level", inside: "ERROR", outside: "fatal", want: `log.level "fatal" must be debug, info, warn or error`},
		{key: "log.format", inside: "json", outside: "JSON", want: `log.format "JSON" must be text or json`},
	} {
		if _, ok := defaults[c.key]; !ok {
			t.Fatalf("%s is not a configuration key", c.key)
		}
		// vars sets the row's variable to v over c.with; an empty v leaves it unset, which is how
		// an empty value arrives from the environment.
		vars := func(v string) func(string) string {
			m := map[string]string{}
			for k, w := range c.with {
				m[k] = w
			}
			if v != "" {
				m[envName(c.key)] = v
			}
			return env(m)
		}
		if _, err := loadConfig("", vars(c.inside)); err != nil {
			t.Errorf("%s=%q refused: %v", c.key, c.inside, err)
		}
		if _, err := loadConfig("", vars(c.outside)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s=%q: %v, want an error saying %q", c.key, c.outside, err, c.want)
		}
	}
}

// TestConfigFileVariableUnreadable: a _FILE variable that names no readable file stops the load
// with an error naming the variable, whether the path does not exist or is a directory; it never
// falls back to the variable without _FILE or to the default.
func TestConfigFileVariableUnreadable(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	missing := filepath.Join(dir, "no-such-secret")
	for _, c := range []struct {
		path  string
		is    error // the cause, when there is a portable one
		cause string
	}{
		{path: missing, is: fs.ErrNotExist, cause: "no such file"},
		{path: dir, cause: "is a directory"},
	} {
		for _, name := range []string{"AGENTCARDS_AUTH_SECRET", "AGENTCARDS_DATABASE_DSN", "AGENTCARDS_AUTH_PLATFORM_ADMINS"} {
			_, err := loadConfig("", env(map[string]string{
				name + "_FILE": c.path,
				name:           "a value that must not be used instead",
			}))
			if err == nil || !strings.Contains(err.Error(), name+"_FILE") || !strings.Contains(err.Error(), c.cause) ||
				(c.is != nil && !errors.Is(err, c.is)) {
				t.Errorf("%s_FILE=%s: %v", name, c.path, err)
			}
		}
	}
	// The same file, readable, is taken (the trailing newline trimmed): the failures above are
	// about the file, not the variable.
	if err := os.WriteFile("admins", []byte("ops,root\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := loadConfig("", env(map[string]string{"AGENTCARDS_AUTH_PLATFORM_ADMINS_FILE": "admins"}))
	if err != nil || strings.Join(cfg.Auth.PlatformAdmins, " ") != "ops root" {
		t.Fatalf("a readable file: %v %v", cfg.Auth.PlatformAdmins, err)
	}
}

// TestConfigPprofNeedsMetrics: server.pprof is refused without server.metricsAddr (the profiles
// have no other listener; the API's is never one), and accepted with it.
func TestConfigPprofNeedsMetrics(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, c := range []struct {
		yaml string
		ok   bool
	}{
		{"server:\n  pprof: true\n  metricsAddr: \"\"\n", false},
		{"server:\n  pprof: true\n  metricsAddr: 127.0.0.1:0\n", true},
		{"server:\n  pprof: false\n  metricsAddr: \"\"\n", true},
	} {
		if err := os.WriteFile("config.yaml", []byte(c.yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := loadConfig("config.yaml", env(nil))
		if c.ok != (err == nil) || (err != nil && !strings.Contains(err.Error(), "server.pprof needs server.metricsAddr")) {
			t.Errorf("%q: %v, want accepted %v", c.yaml, err, c.ok)
		}
	}
}
