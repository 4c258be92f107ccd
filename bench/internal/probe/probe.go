// Package probe is what the benchmark tools read of a running server from outside: its API as a
// platform admin, its metrics, the process's resident memory, and the machine's load.
package probe

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Client calls servers with a bearer token.
type Client struct {
	HTTP  *http.Client
	Token string
}

// Do sends one request and returns the answer and its body; an answer other than want is an
// error quoting the start of the body (the answer is returned with it).
func (c *Client) Do(ctx context.Context, method, u string, body []byte, want int) (*http.Response, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := c.HTTP.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, nil, err
	}
	if res.StatusCode != want {
		return res, nil, fmt.Errorf("%s %s: %d %s", method, u, res.StatusCode, b[:min(len(b), 300)])
	}
	return res, b, nil
}

// Scrape reads the metrics at base (a metrics listener's base URL) and sums each family's
// samples: a counter's or gauge's values under its name, a summary's counts and sums under
// name_count and name_sum.
func Scrape(ctx context.Context, c *Client, base string) (map[string]float64, error) {
	_, b, err := c.Do(ctx, http.MethodGet, base+"/metrics", nil, http.StatusOK)
	if err != nil {
		return nil, err
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	parsed, err := parser.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for name, f := range parsed {
		for _, m := range f.Metric {
			switch {
			case m.Gauge != nil:
				out[name] += m.Gauge.GetValue()
			case m.Counter != nil:
				out[name] += m.Counter.GetValue()
			case m.Summary != nil:
				out[name+"_count"] += float64(m.Summary.GetSampleCount())
				out[name+"_sum"] += m.Summary.GetSampleSum()
			}
		}
	}
	return out, nil
}

// RSS reads the resident set of process pid, in bytes (0 if it cannot).
func RSS(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// Percentile is the p-th percentile of ds (the nearest rank), rounded to 10 µs; 0 for none.
func Percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	return s[min(max(i-1, 0), len(s)-1)].Round(10 * time.Microsecond)
}

// LoadAverage is the machine's load averages over 1, 5 and 15 minutes, as /proc/loadavg has
// them ("?" if it cannot be read).
func LoadAverage() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
