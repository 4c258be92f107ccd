package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentcards/agentcards/web"
	"github.com/agentcards/agentcards/web/mcp"
	"github.com/agentcards/agentcards/web/outbound"
)

// check refuses a toolset the MCP door does not have.
func (m MCPConfig) check() []error {
	if err := mcp.CheckToolsets(m.Toolsets); err != nil {
		return []error{fmt.Errorf("mcp.toolsets: %w", err)}
	}
	return nil
}

// check refuses every setting out of its range, each with an error naming its key, and puts the
// database file and the index snapshots under dataDir when their settings are empty. The errors
// come section by section, in the order listed here.
func (c *Config) check() error {
	errs := slices.Concat(
		c.Database.check(),
		c.Server.check(),
		c.Auth.check(),
		c.Search.checkIndex(),
		c.Audit.check(),
		c.A2A.checkRefresh(),
		c.Liveness.check(),
		c.Search.checkUpkeep(),
		c.Search.Streams.checkStreams(),
		c.Outbound.checkTimeout(),
		c.A2A.checkCache(),
		c.Outbound.checkAllow(),
		c.Delegation.check(),
		c.Log.check(),
		c.MCP.check(),
		c.Webhooks.check(),
	)
	c.fillPaths()
	return errors.Join(errs...)
}

// fillPaths puts the SQLite file and the index snapshots under dataDir when database.dsn and
// search.snapshotDir are empty.
func (c *Config) fillPaths() {
	if c.Database.DSN == "" {
		c.Database.DSN = filepath.Join(c.DataDir, "agentcards.db")
	}
	if c.Search.SnapshotDir == "" {
		c.Search.SnapshotDir = filepath.Join(c.DataDir, "index")
	}
}

// check refuses an unknown driver, a pool size for SQLite (which sizes its own), a server
// database without its DSN (SQLite's is a file under dataDir, see fillPaths) and a direct DSN
// for another database than Postgres.
func (d DatabaseConfig) check() []error {
	var errs []error
	if !slices.Contains([]string{"sqlite", "postgres", "mysql"}, d.Driver) {
		errs = append(errs, fmt.Errorf("database.driver %q must be sqlite, postgres or mysql", d.Driver))
	}
	switch {
	case d.MaxConns < 0:
		errs = append(errs, fmt.Errorf("database.maxConns %d must be 0 (the default) or more", d.MaxConns))
	case d.MaxConns > 0 && d.Driver == "sqlite":
		errs = append(errs, errors.New("database.maxConns applies to postgres and mysql: SQLite writes on one connection and sizes its own read pool"))
	}
	if d.DSN == "" && d.Driver != "sqlite" {
		errs = append(errs, fmt.Errorf("database.dsn is required for %s", d.Driver))
	}
	if d.DirectDSN != "" && d.Driver != "postgres" {
		errs = append(errs, errors.New("database.directDsn applies to postgres: the connection for migrations and LISTEN that bypasses a pooler"))
	}
	return errs
}

// The range of server.maxJsonDepth: the A2A cards of the spec and its SDKs nest five levels
// deep, and encoding/json refuses JSON nested more than 10,000 levels anyway.
const (
	minJSONDepth = 8
	maxJSONDepth = 10000
)

// check bounds the listener's limits and timeouts. The tenant cache stays at most 500ms so
// that a policy change reaches every replica within a second.
func (s ServerConfig) check() []error {
	var errs []error
	if s.BodyLimit <= 0 {
		errs = append(errs, errors.New("server.bodyLimit must be positive"))
	}
	if s.RequestTimeout <= 0 || s.ShutdownTimeout <= 0 {
		errs = append(errs, errors.New("server.requestTimeout and server.shutdownTimeout must be positive"))
	}
	if s.TenantCacheTTL < 0 || s.TenantCacheTTL > 500*time.Millisecond {
		errs = append(errs, errors.New("server.tenantCacheTtl must be between 0 and 500ms (policy changes must reach every replica within 1 s)"))
	}
	if d := s.MaxJSONDepth; d < minJSONDepth || d > maxJSONDepth {
		errs = append(errs, fmt.Errorf("server.maxJsonDepth %d must be between %d and %d", d, minJSONDepth, maxJSONDepth))
	}
	if s.Pprof && s.MetricsAddr == "" {
		errs = append(errs, errors.New("server.pprof needs server.metricsAddr: the profiles are served on the metrics listener, never the API's"))
	}
	if s.GCHeadroom < 0 {
		errs = append(errs, errors.New("server.gcHeadroom must not be negative (0 leaves the Go runtime's pace)"))
	}
	for _, o := range s.CORSOrigins {
		// Exact origins only: a wildcard would also admit any page at /mcp, which the MCP
		// transport asks to refuse against DNS rebinding.
		if _, err := web.ParseOrigin(o); err != nil {
			errs = append(errs, fmt.Errorf("server.corsOrigins: %w (list each origin, no wildcard)", err))
		}
	}
	return errs
}

// check bounds the clock skew allowed on tokens to five minutes.
func (a AuthConfig) check() []error {
	if a.Leeway < 0 || a.Leeway > 5*time.Minute {
		return []error{errors.New("auth.leeway must be between 0 and 5m")}
	}
	return nil
}

// checkIndex refuses an unknown search.index and a change feed kept less than an hour.
func (s SearchConfig) checkIndex() []error {
	var errs []error
	if s.Index != "memory" && s.Index != "none" {
		errs = append(errs, fmt.Errorf("search.index %q must be memory or none", s.Index))
	}
	if s.FeedRetention < time.Hour {
		errs = append(errs, errors.New("search.feedRetention must be at least 1h"))
	}
	return errs
}

// checkUpkeep bounds how the indexes are kept: their warm-up window, their outage copy and how
// often they poll the change feed.
func (s SearchConfig) checkUpkeep() []error {
	var errs []error
	if s.WarmWindow < 0 {
		errs = append(errs, errors.New("search.warmWindow must not be negative"))
	}
	if s.OutageCopyBytes < 0 {
		errs = append(errs, errors.New("search.outageCopyBytes must not be negative (0 keeps no copy)"))
	}
	if s.MemoryBudget < 0 {
		errs = append(errs, errors.New("search.memoryBudget must not be negative (0 bounds nothing)"))
	}
	if s.PollInterval < 10*time.Millisecond {
		errs = append(errs, errors.New("search.pollInterval must be at least 10ms"))
	}
	return errs
}

// checkStreams refuses bounds of the change feed's live streams under 1: 0 would refuse every
// stream, or drop every reader.
func (s StreamsConfig) checkStreams() []error {
	var errs []error
	for _, b := range []struct {
		key string
		n   int
	}{{"perTenant", s.PerTenant}, {"perReplica", s.PerReplica}, {"buffer", s.Buffer}} {
		if b.n < 1 {
			errs = append(errs, fmt.Errorf("search.streams.%s must be at least 1", b.key))
		}
	}
	return errs
}

// check bounds the webhook settings: delivery needs a positive poll, timeout and backoff, a
// backoff range in order, a lease that outlasts a delivery, and at least one of each count.
func (w WebhooksConfig) check() []error {
	var errs []error
	if w.PollInterval < 100*time.Millisecond || w.Timeout <= 0 || w.MinBackoff <= 0 || w.DisableAfter <= 0 {
		errs = append(errs, errors.New("webhooks.pollInterval must be at least 100ms, and timeout, minBackoff and disableAfter positive"))
	}
	if w.MaxBackoff < w.MinBackoff {
		errs = append(errs, errors.New("webhooks.maxBackoff must be at least webhooks.minBackoff"))
	}
	if w.Lease < 2*w.Timeout {
		errs = append(errs, fmt.Errorf("webhooks.lease (%s) must be at least twice webhooks.timeout (%s): a delivery must end within the lease it renews", w.Lease, w.Timeout))
	}
	if w.MaxPerTenant < 1 || w.KeepDeliveries < 1 || w.Concurrency < 1 {
		errs = append(errs, errors.New("webhooks.maxPerTenant, keepDeliveries and concurrency must be at least 1"))
	}
	return errs
}

// check refuses an audit retention under an hour, other than 0 (keep for good).
func (a AuditConfig) check() []error {
	if r := a.Retention; r != 0 && r < time.Hour {
		return []error{errors.New("audit.retention must be 0 (keep for good) or at least 1h")}
	}
	return nil
}

// checkRefresh refuses scheduled refreshes more often than once a minute.
func (a A2AConfig) checkRefresh() []error {
	if ri := a.RefreshInterval; ri != 0 && ri < time.Minute {
		return []error{errors.New("a2a.refreshInterval must be 0 (off) or at least 1m")}
	}
	return nil
}

// checkCache refuses an A2A card served without a positive max-age.
func (a A2AConfig) checkCache() []error {
	if a.CacheMaxAge <= 0 {
		return []error{errors.New("a2a.cacheMaxAge must be positive")}
	}
	return nil
}

// check bounds the heartbeat TTL and the probes, and makes the TTL span the gap between two
// probes of a card.
func (l LivenessConfig) check() []error {
	var errs []error
	pr := l.Probe
	if l.TTL < time.Second {
		errs = append(errs, errors.New("liveness.ttl must be at least 1s"))
	}
	if pr.Interval != 0 && pr.Interval < time.Second {
		errs = append(errs, errors.New("liveness.probe.interval must be 0 (off) or at least 1s"))
	}
	// A card is probed once an interval, at a random moment of the round's first half: two
	// probes of it may be an interval and a half (and a timeout) apart, which the TTL must
	// span, or a card known only by its probes would go offline between them.
	if pr.Interval > 0 && l.TTL < pr.Interval*3/2+pr.Timeout {
		errs = append(errs, fmt.Errorf("liveness.ttl (%s) must be at least 1.5 × liveness.probe.interval + liveness.probe.timeout (%s) when probes are on",
			l.TTL, pr.Interval*3/2+pr.Timeout))
	}
	if pr.Failures < 1 || pr.Concurrency < 1 || pr.PerTenant < 1 || pr.Timeout <= 0 {
		errs = append(errs, errors.New("liveness.probe.failures, concurrency and perTenant must be at least 1, and timeout positive"))
	}
	if p := pr.Path; p != "" && (!strings.HasPrefix(p, "/") || strings.ContainsAny(p, "?#")) {
		errs = append(errs, errors.New("liveness.probe.path must be a path starting with / (no query)"))
	}
	return errs
}

// checkTimeout refuses calls to registered URLs without a positive timeout.
func (o OutboundConfig) checkTimeout() []error {
	if o.Timeout <= 0 {
		return []error{errors.New("outbound.timeout must be positive")}
	}
	return nil
}

// checkAllow refuses an outbound.allow entry that is neither an address nor a CIDR prefix.
func (o OutboundConfig) checkAllow() []error {
	if _, err := outbound.ParsePrefixes(o.Allow); err != nil {
		return []error{fmt.Errorf("outbound.allow: %w", err)}
	}
	return nil
}

// check refuses guard rails that would let no delegation through or bound none, a secret key
// that is not 32 bytes, and a public URL that is not http(s).
func (d DelegationConfig) check() []error {
	var errs []error
	if d.MaxDepth < 1 || d.DefaultTimeout <= 0 || d.MaxTimeout < d.DefaultTimeout || d.MaxAsyncTimeout < d.MaxTimeout ||
		d.MaxResultBytes <= 0 || d.BreakerFailures < 1 || d.BreakerCooldown <= 0 || d.RatePerSecond < 0 || d.RateBurst < 1 || (d.RecordTask && d.RecordTaskBytes < 1) {
		errs = append(errs, errors.New("delegation: maxDepth, defaultTimeout, maxResultBytes, breakerFailures, breakerCooldown, rateBurst (and recordTaskBytes with recordTask) must be positive, maxTimeout at least defaultTimeout, maxAsyncTimeout at least maxTimeout, ratePerSecond not negative"))
	}
	if _, err := d.secretKey(); err != nil {
		errs = append(errs, err)
	}
	if u := d.PublicURL; u != "" && !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		errs = append(errs, fmt.Errorf("delegation.publicUrl %q must be an http(s) URL", u))
	}
	return errs
}

// check refuses an unknown log level (in any case) or format.
func (l LogConfig) check() []error {
	var errs []error
	if !slices.Contains([]string{"debug", "info", "warn", "error"}, strings.ToLower(l.Level)) {
		errs = append(errs, fmt.Errorf("log.level %q must be debug, info, warn or error", l.Level))
	}
	if !slices.Contains([]string{"text", "json"}, l.Format) {
		errs = append(errs, fmt.Errorf("log.format %q must be text or json", l.Format))
	}
	return errs
}
