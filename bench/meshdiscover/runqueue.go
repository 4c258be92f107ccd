package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// waited is the time the threads of the processes pids spent runnable but waiting for a CPU,
// summed (Linux's /proc/PID/task/TID/schedstat, its second field; 0 where it cannot be read).
// Its growth over a query is how long the query's client and server were kept off the CPUs by
// each other and by the rest of the machine.
func waited(pids []int) time.Duration {
	var sum time.Duration
	for _, pid := range pids {
		tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/schedstat")
		for _, t := range tasks {
			b, err := os.ReadFile(t)
			if err != nil {
				continue // the thread ended
			}
			if f := strings.Fields(string(b)); len(f) >= 2 {
				ns, _ := strconv.ParseInt(f[1], 10, 64)
				sum += time.Duration(ns)
			}
		}
	}
	return sum
}
