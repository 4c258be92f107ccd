// Package gcpace bounds the garbage the Go heap holds between collections. The Go runtime lets
// the heap grow by GOGC percent (100 by default) of what is live before it collects again: a
// server whose live heap is mostly one large index (a tenant of a million cards keeps ~0.6 GiB)
// would hold as much again in garbage. A Pacer, after each collection, sets the percentage so
// that the garbage allowed is at most a headroom, never below a floor, and gives the percentage
// back as the live heap shrinks. A heap smaller than the headroom keeps the runtime's own pace.
package gcpace

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// Floor is the lowest percentage a Pacer sets: past a live heap of headroom × 100 / Floor, the
// garbage allowed grows with the live heap again, so a large heap is not collected without end.
const Floor = 25

// A Pacer sets the runtime's GC percentage after each collection (see the package's comment); a
// cleanup that runs late, after the next collection has begun, makes it lag by a collection.
// One paces a process: a Start while another Pacer runs shares it (its headroom stays), and the
// last Stop stops it.
type Pacer struct {
	shared *pacer
	once   sync.Once
}

// running is the pacer of the process, and how many Pacers share it.
var running struct {
	sync.Mutex
	p     *pacer
	users int
}

type pacer struct {
	headroom uint64
	base     int // the percentage at the start, the most a Pacer sets, restored by Stop

	mu      sync.Mutex
	percent int // what the Pacer last set
	stopped bool
	samples []metrics.Sample
}

// metric names of what the runtime's pace is a percentage of: the heap marked live at the end
// of the last collection, and the stacks and globals it scanned.
var paced = []string{"/gc/heap/live:bytes", "/gc/scan/stack:bytes", "/gc/scan/globals:bytes"}

// Start starts a Pacer that keeps the garbage between collections within headroom bytes. It
// takes the percentage in effect (GOGC, 100 unless set) as the most it sets.
func Start(headroom int64) *Pacer {
	running.Lock()
	defer running.Unlock()
	running.users++
	if running.p == nil {
		gogc := []metrics.Sample{{Name: "/gc/gogc:percent"}}
		metrics.Read(gogc)
		base := int(gogc[0].Value.Uint64())
		p := &pacer{headroom: uint64(max(headroom, 0)), base: base, percent: base, samples: make([]metrics.Sample, len(paced))}
		for i, name := range paced {
			p.samples[i].Name = name
		}
		p.pace()
		p.arm()
		running.p = p
	}
	return &Pacer{shared: running.p}
}

// arm has pace run again after the next collection: the cleanup of an object nothing refers to
// runs once a collection has found it unreachable.
func (p *pacer) arm() {
	sentinel := new([64]byte) // not a tiny allocation, which may share its block with others
	runtime.AddCleanup(sentinel, func(p *pacer) {
		if p.pace() {
			p.arm()
		}
	}, p)
}

// pace sets the percentage from the last collection's figures, and reports whether the Pacer
// runs still.
func (p *pacer) pace() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return false
	}
	metrics.Read(p.samples)
	var scanned uint64
	for _, s := range p.samples {
		if s.Value.Kind() == metrics.KindUint64 {
			scanned += s.Value.Uint64()
		}
	}
	if want := Percent(scanned, p.headroom, p.base); want != p.percent {
		debug.SetGCPercent(want)
		p.percent = want
	}
	return true
}

// Percent is the GC percentage that allows at most headroom bytes of garbage over live bytes
// (the heap, stacks and globals a collection scanned): base where that allows no more, else the
// headroom's share of live, never below Floor nor above base. A base of 0 or less (collections
// off, or at every allocation) is kept.
func Percent(live, headroom uint64, base int) int {
	if base <= 0 || live == 0 || live*uint64(base) <= headroom*100 {
		return base
	}
	pct := int(math.Floor(float64(headroom) * 100 / float64(live)))
	return min(max(pct, Floor), base)
}

// Percent is the percentage the Pacer set last.
func (p *Pacer) Percent() int {
	p.shared.mu.Lock()
	defer p.shared.mu.Unlock()
	return p.shared.percent
}

// Stop lets go of the Pacer; the last of those sharing it stops it and restores the percentage
// it started from (whatever else set one meanwhile). A second Stop does nothing.
func (p *Pacer) Stop() {
	p.once.Do(func() {
		running.Lock()
		defer running.Unlock()
		if running.users--; running.users > 0 {
			return
		}
		running.p = nil
		p.shared.stop()
	})
}

func (p *pacer) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopped = true
	debug.SetGCPercent(p.base)
}
