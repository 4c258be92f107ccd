//go:build !unix

package web_test

import "time"

// processCPU is not measured here; the benchmarks then report wall-clock figures only.
func processCPU() (time.Duration, bool) { return 0, false }
