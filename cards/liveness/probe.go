package liveness

import (
	"cmp"
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentcards/agentcards/cards"
	"github.com/agentcards/agentcards/tenants"
)

// ProbeConfig says how agents are probed (liveness.probe). Probes are off while Interval is 0.
type ProbeConfig struct {
	// Interval is how often each card is probed, by one replica.
	Interval time.Duration
	// Failures is how many failed probes in a row make a card offline.
	Failures int
	// Timeout bounds one probe.
	Timeout time.Duration
	// Concurrency bounds the probes in flight on a replica, PerTenant those of one tenant.
	Concurrency, PerTenant int
	// Path, when set, is probed at the origin of each card's endpoint instead of the agent's
	// A2A card ("/health").
	Path string
	// Spread is how long a round spreads its probes over, at random, so that neither rounds nor
	// replicas fire at once: half the interval when zero, none when negative.
	Spread time.Duration
}

// ProbeDefaults are the settings of probes but their interval.
var ProbeDefaults = ProbeConfig{Failures: 3, Timeout: 5 * time.Second, Concurrency: 32, PerTenant: 8}

// WithDefaults fills the zero settings with ProbeDefaults.
func (c ProbeConfig) WithDefaults() ProbeConfig {
	if c.Failures <= 0 {
		c.Failures = ProbeDefaults.Failures
	}
	if c.Timeout <= 0 {
		c.Timeout = ProbeDefaults.Timeout
	}
	if c.Concurrency <= 0 {
		c.Concurrency = ProbeDefaults.Concurrency
	}
	if c.PerTenant <= 0 {
		c.PerTenant = ProbeDefaults.PerTenant
	}
	return c
}

// Candidate is a card that may be probed: a card of an active tenant, at its revision.
type Candidate struct {
	Tenant   tenants.ID
	AgentID  string
	CardID   string
	Revision int64
}

// ProbeResult is one probe's outcome.
type ProbeResult struct {
	Tenant    tenants.ID
	AgentID   string
	CardID    string
	At        time.Time
	OK        bool
	LatencyMs int64
	Error     string
}

// ProbeStore is what probes need of the database.
type ProbeStore interface {
	// Candidates lists the cards of every active tenant.
	Candidates(ctx context.Context) ([]Candidate, error)
	// Claim leases the next probe of the tenant's given cards to owner until until, where no
	// one else holds it (now is past the lease), and returns the agents it got.
	Claim(ctx context.Context, owner string, tenant tenants.ID, cs []Candidate, now, until time.Time) ([]string, error)
	// SaveProbes records the outcomes of probes of cards that still exist (failures in a row,
	// the card offline when they reach failures), stamped as written at, and returns the
	// records as stored.
	SaveProbes(ctx context.Context, results []ProbeResult, failures int, at time.Time) ([]Record, error)
}

// CardReader reads cards' documents, for the URL each is probed at.
type CardReader interface {
	GetMany(ctx context.Context, tenant tenants.ID, ids []string) ([]cards.Card, error)
}

// Doer sends a probe: the SSRF-guarded client.
type Doer interface {
	Do(*http.Request) (*http.Response, error)
}

// Secrets gives the static secret a card holds for its endpoint URL, which cards/delegation's
// EndpointSecrets keep sealed to that URL: probes of the endpoint's origin carry it, so that an
// agent that asks for it on every route is not taken for a dead one.
type Secrets interface {
	// Credential returns the header a request carries the card's secret in, and that header's
	// value; an empty value when the card holds none for endpoint (none at all, or one set while
	// its endpoint was another URL).
	Credential(ctx context.Context, tenant tenants.ID, agentID, endpoint string) (header, value string, err error)
}

// Prober probes the cards that this replica claims, every interval.
type Prober struct {
	// Secrets, when set before Run, gives the credential a probe carries when it goes to the
	// origin of the card's endpoint; nil: probes carry none.
	Secrets Secrets
	// SecretFailed, when set, is told of each secret Secrets could not give; the probe goes on
	// without it, and the card's liveness does not tell of it.
	SecretFailed func(tenant tenants.ID, agentID string, err error)

	cfg     ProbeConfig
	store   ProbeStore
	cards   CardReader
	doer    Doer
	tracker *Tracker
	replica string

	mu      sync.Mutex
	rounds  int
	targets map[beatKey]target // by card, what it is probed at, as of its revision
}

type target struct {
	cardID   string
	revision int64
	url      string // empty: not probed (disabled, or nowhere to probe)
	// secretFor is the card's endpoint when url is at its origin: the URL whose secret the
	// probe carries. Empty: the probe carries none.
	secretFor string
}

// NewProber returns a prober; its results go to tracker.
func NewProber(cfg ProbeConfig, store ProbeStore, cards CardReader, doer Doer, tracker *Tracker) *Prober {
	var id [6]byte
	_, _ = crand.Read(id[:])
	return &Prober{cfg: cfg.WithDefaults(), store: store, cards: cards, doer: doer, tracker: tracker,
		replica: hex.EncodeToString(id[:]), targets: map[beatKey]target{}}
}

// Run probes every interval until ctx ends; errors are given to failed.
func (p *Prober) Run(ctx context.Context, failed func(error)) {
	if p.cfg.Interval <= 0 {
		return
	}
	tick := time.NewTicker(p.cfg.Interval)
	defer tick.Stop()
	for {
		if _, err := p.Round(ctx); err != nil && ctx.Err() == nil && failed != nil {
			failed(err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// RoundStats say what one round did: the cards it claimed and set out to probe, the probes
// made (and recorded), and those of them that failed.
type RoundStats struct {
	Claimed, Probed, Failed int
}

// Round is one interval's work: claim the cards due whose next probe nobody holds, probe them
// spread over half the interval (so replicas and rounds do not fire at once), and record what
// was found as it comes in. A probe not started before the lease runs out, or before ctx ends,
// is not made (and nothing is recorded for it): the card is due again next round.
func (p *Prober) Round(ctx context.Context) (RoundStats, error) {
	cands, err := p.store.Candidates(ctx)
	if err != nil {
		return RoundStats{}, fmt.Errorf("probe: list cards: %w", err)
	}
	byTenant, err := p.probed(ctx, cands)
	if err != nil {
		return RoundStats{}, err
	}
	// A lease a little shorter than the interval: the next round, an interval later, finds it
	// run out.
	lease := p.cfg.Interval - p.cfg.Interval/10
	jobs, failed := p.claim(ctx, byTenant, lease)
	p.schedule(jobs)

	// Results are saved as they come, a batch at a time, so other replicas read them within
	// their poll interval, not at the end of the round.
	results := make(chan ProbeResult, saveChunk)
	saved := make(chan error, 1)
	stats := RoundStats{}
	go func() { saved <- p.save(results, &stats) }()
	stats.Claimed = p.probeAll(ctx, jobs, lease, results)
	close(results)
	if err := <-saved; err != nil {
		return stats, err
	}
	return stats, failed
}

// probeJob is one card a round claimed: the URL it is probed at (with the endpoint whose secret
// it carries, if any), and when in the round.
type probeJob struct {
	c         Candidate
	url       string
	secretFor string
	at        time.Duration
}

// claim leases the next probe of the given cards to this round for lease, a chunk at a time,
// and returns a job for each card it got. A tenant whose cards cannot be claimed gets no more
// jobs while the others go on; the error returned is the first such failure.
func (p *Prober) claim(ctx context.Context, byTenant map[tenants.ID][]Candidate, lease time.Duration) ([]probeJob, error) {
	p.mu.Lock()
	p.rounds++
	owner := fmt.Sprintf("%s/%d", p.replica, p.rounds)
	p.mu.Unlock()
	now := p.tracker.clock()
	until := now.Add(lease)
	var jobs []probeJob
	var failed error
	for tenant, cs := range byTenant {
		for start := 0; start < len(cs); start += claimChunk {
			chunk := cs[start:min(len(cs), start+claimChunk)]
			got, err := p.store.Claim(ctx, owner, tenant, chunk, now, until)
			if err != nil {
				failed = cmp.Or(failed, fmt.Errorf("probe: claim: %w", err))
				break
			}
			for _, c := range chunk {
				if slices.Contains(got, c.AgentID) {
					t := p.target(c)
					jobs = append(jobs, probeJob{c: c, url: t.url, secretFor: t.secretFor})
				}
			}
		}
	}
	return jobs, failed
}

// schedule gives each job a random time within the round's spread and sorts the jobs by it.
func (p *Prober) schedule(jobs []probeJob) {
	spread := p.cfg.Spread
	if spread == 0 {
		spread = p.cfg.Interval / 2
	}
	for i := range jobs {
		if spread > 0 {
			jobs[i].at = rand.N(spread)
		}
	}
	slices.SortFunc(jobs, func(a, b probeJob) int { return int(a.at - b.at) })
}

// probeAll starts each job at its time, sending to results what the probes find, and returns
// how many it started once they all ended. It starts none after ctx ends or the lease runs out.
func (p *Prober) probeAll(ctx context.Context, jobs []probeJob, lease time.Duration, results chan<- ProbeResult) int {
	global := make(chan struct{}, p.cfg.Concurrency)
	perTenant := map[tenants.ID]chan struct{}{}
	var wg sync.WaitGroup
	began := time.Now()
	expired := func() bool { return time.Since(began) >= lease }
	started := 0
	for _, j := range jobs {
		if d := j.at - time.Since(began); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
			}
		}
		if ctx.Err() != nil || expired() {
			break
		}
		sem := perTenant[j.c.Tenant]
		if sem == nil {
			sem = make(chan struct{}, p.cfg.PerTenant)
			perTenant[j.c.Tenant] = sem
		}
		started++
		// Each probe waits for its tenant's slot in a goroutine of its own, and only then for
		// a global one: a tenant whose agents hang holds up neither the others nor the schedule.
		wg.Go(func() { p.probeInSlots(ctx, j, sem, global, expired, results) })
	}
	wg.Wait()
	return started
}

// probeInSlots takes a slot of the job's tenant, then a global one, and probes the card unless
// ctx ended or the lease ran out meanwhile; a probe that says something of the agent goes to
// results.
func (p *Prober) probeInSlots(ctx context.Context, j probeJob, tenant, global chan struct{}, expired func() bool, results chan<- ProbeResult) {
	select {
	case tenant <- struct{}{}:
	case <-ctx.Done():
		return
	}
	defer func() { <-tenant }()
	select {
	case global <- struct{}{}:
	case <-ctx.Done():
		return
	}
	defer func() { <-global }()
	if ctx.Err() != nil || expired() {
		return
	}
	if r, ok := p.probe(ctx, j); ok {
		results <- r
	}
}

// save records the results of a round as they come, a chunk at a time or at least every
// second, and counts them into stats; it returns the first failure to save.
func (p *Prober) save(results <-chan ProbeResult, stats *RoundStats) error {
	var first error
	var batch []ProbeResult
	flush := func() {
		if len(batch) == 0 {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
		recs, err := p.store.SaveProbes(ctx, batch, p.cfg.Failures, p.tracker.clock())
		cancel()
		if err != nil {
			first = cmp.Or(first, fmt.Errorf("probe: save: %w", err))
		} else {
			p.tracker.applyStored(recs)
		}
		batch = batch[:0]
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case r, ok := <-results:
			if !ok {
				flush()
				return first
			}
			stats.Probed++
			if !r.OK {
				stats.Failed++
			}
			if batch = append(batch, r); len(batch) >= saveChunk {
				flush()
			}
		case <-tick.C:
			flush()
		}
	}
}

// claimChunk and saveChunk bound the cards of one claim and one save.
const (
	claimChunk = 500
	saveChunk  = 200
)

// probed returns, by tenant and in agentId order, the candidates that have somewhere to be
// probed, reading the documents of those new or changed since the last round.
func (p *Prober) probed(ctx context.Context, cands []Candidate) (map[tenants.ID][]Candidate, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	stale := map[tenants.ID][]string{}
	seen := make(map[beatKey]bool, len(cands))
	for _, c := range cands {
		k := beatKey{c.Tenant, c.AgentID}
		seen[k] = true
		if t, ok := p.targets[k]; !ok || t.cardID != c.CardID || t.revision != c.Revision {
			stale[c.Tenant] = append(stale[c.Tenant], c.AgentID)
		}
	}
	for k := range p.targets {
		if !seen[k] {
			delete(p.targets, k) // deleted, or its tenant suspended
		}
	}
	for tenant, ids := range stale {
		for start := 0; start < len(ids); start += claimChunk {
			cs, err := p.cards.GetMany(ctx, tenant, ids[start:min(len(ids), start+claimChunk)])
			if err != nil {
				return nil, fmt.Errorf("probe: read cards: %w", err)
			}
			for _, c := range cs {
				u := probeURL(c, p.cfg.Path)
				p.targets[beatKey{tenant, c.AgentID}] = target{cardID: c.ID, revision: c.Revision, url: u, secretFor: secretFor(c, u)}
			}
		}
	}
	out := map[tenants.ID][]Candidate{}
	for _, c := range cands {
		if t, ok := p.targets[beatKey{c.Tenant, c.AgentID}]; ok && t.url != "" && t.cardID == c.CardID {
			out[c.Tenant] = append(out[c.Tenant], c)
		}
	}
	for _, cs := range out {
		slices.SortFunc(cs, func(a, b Candidate) int { return strings.Compare(a.AgentID, b.AgentID) })
	}
	return out, nil
}

func (p *Prober) target(c Candidate) target {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.targets[beatKey{c.Tenant, c.AgentID}]
}

// probeURL is where a card is probed: the configured path at its endpoint's origin, or its A2A
// card (where it was imported from, else the well-known path at the endpoint's origin); empty
// for a disabled card or one with neither.
func probeURL(c cards.Card, path string) string {
	if c.Disabled() {
		return ""
	}
	if path == "" && c.Source != nil && c.Source.URL != "" {
		return c.Source.URL
	}
	u, err := url.Parse(c.Endpoint)
	if c.Endpoint == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return ""
	}
	if path == "" {
		path = "/.well-known/agent-card.json"
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: path}).String()
}

// secretFor is the endpoint whose secret a probe of the card at u carries: the card's endpoint
// when u is at its origin, else none, so that a secret never goes to another origin (such as
// the one the card was imported from).
func secretFor(c cards.Card, u string) string {
	if u == "" || !sameOrigin(u, c.Endpoint) {
		return ""
	}
	return c.Endpoint
}

// sameOrigin reports whether two HTTP URLs have the same scheme, host and port (a scheme's
// default port when none is written).
func sameOrigin(a, b string) bool {
	oa, ob := origin(a), origin(b)
	return oa != "" && oa == ob
}

// origin is an HTTP URL's scheme://host:port, lowercase; empty for any other URL.
func origin(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Hostname() == "" {
		return ""
	}
	scheme, port := strings.ToLower(u.Scheme), u.Port()
	switch {
	case scheme != "http" && scheme != "https":
		return ""
	case port == "" && scheme == "http":
		port = "80"
	case port == "":
		port = "443"
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// maxProbeBody is as much of an answer as a probe reads.
const maxProbeBody = 64 << 10

// probe fetches the job's URL once, with the card's credential when the job carries its
// endpoint's: a 2xx answer within the timeout is a success. It reports false when ctx ended
// meanwhile (the server stopping): that says nothing of the agent.
func (p *Prober) probe(parent context.Context, j probeJob) (ProbeResult, bool) {
	c := j.c
	r := ProbeResult{Tenant: c.Tenant, AgentID: c.AgentID, CardID: c.CardID}
	header, value := p.credential(parent, j)
	ctx, cancel := context.WithTimeout(parent, p.cfg.Timeout)
	defer cancel()
	start := time.Now()
	err := func() error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, j.url, nil)
		if err != nil {
			return err
		}
		req.Header.Set("Accept", "application/json")
		if value != "" {
			req.Header.Set(header, value)
		}
		resp, err := p.doer.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxProbeBody))
		if resp.StatusCode < 200 || resp.StatusCode > 299 {
			return fmt.Errorf("answered %d", resp.StatusCode)
		}
		return nil
	}()
	r.LatencyMs = time.Since(start).Milliseconds()
	r.At = p.tracker.clock()
	if parent.Err() != nil {
		return r, false
	}
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("no answer within %s", p.cfg.Timeout)
		}
		r.Error = cards.Clip(err.Error(), 200)
		return r, true
	}
	r.OK = true
	return r, true
}

// credential returns the header and value of the secret the job's card holds for the endpoint
// the job carries it for; none without Secrets, or when it cannot be read (SecretFailed is told,
// unless ctx ended). Reading it takes at most a probe's timeout, apart from the probe's own.
func (p *Prober) credential(parent context.Context, j probeJob) (header, value string) {
	if p.Secrets == nil || j.secretFor == "" {
		return "", ""
	}
	ctx, cancel := context.WithTimeout(parent, p.cfg.Timeout)
	defer cancel()
	header, value, err := p.Secrets.Credential(ctx, j.c.Tenant, j.c.AgentID, j.secretFor)
	switch {
	case err != nil:
		if parent.Err() == nil && p.SecretFailed != nil {
			p.SecretFailed(j.c.Tenant, j.c.AgentID, err)
		}
		return "", ""
	case header == "":
		return "", ""
	}
	return header, value
}

// applyStored applies records just written by this replica.
func (t *Tracker) applyStored(recs []Record) {
	now := t.clock()
	for _, r := range recs {
		if tl := t.loaded(r.Tenant); tl != nil {
			tl.mu.Lock()
			tl.apply(r, now, t.ttl)
			tl.mu.Unlock()
		}
	}
}
