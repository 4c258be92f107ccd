package metrics_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/agentcards/agentcards/cmd/agentcards/app/metrics"
)

// sample is one series as gathered: its labels as "k=v,k=v" (sorted), and its value (a
// histogram's count; sum is its sum).
type sample struct {
	labels string
	value  float64
	sum    float64
}

// gather collects the registry and returns the series of each family by name.
func gather(t *testing.T, m *metrics.Metrics) map[string][]sample {
	t.Helper()
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]sample{}
	for _, f := range families {
		for _, mt := range f.Metric {
			var labels []string
			for _, l := range mt.Label {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			slices.Sort(labels)
			s := sample{labels: strings.Join(labels, ",")}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				s.value = mt.Counter.GetValue()
			case dto.MetricType_GAUGE:
				s.value = mt.Gauge.GetValue()
			case dto.MetricType_HISTOGRAM:
				s.value, s.sum = float64(mt.Histogram.GetSampleCount()), mt.Histogram.GetSampleSum()
			case dto.MetricType_UNTYPED:
				s.value = mt.Untyped.GetValue()
			}
			out[f.GetName()] = append(out[f.GetName()], s)
		}
	}
	return out
}

// series is a family's series as "labels value", sorted, for comparing with a list written by
// hand.
func series(got map[string][]sample, family string) []string {
	var out []string
	for _, s := range got[family] {
		out = append(out, fmt.Sprintf("%s %g", s.labels, s.value))
	}
	slices.Sort(out)
	return out
}
