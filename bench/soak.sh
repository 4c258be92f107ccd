#!/bin/sh
# Soak (not in CI): the real binary under 30 minutes of mixed load, watched for leaks. 32
# closed-loop clients in 2 tenants of 2,000 cards send free-text, capability, tag and paged
# searches, card GETs, PATCH and PUT of existing cards, registrations and deletions of new cards
# (their number stays bounded), heartbeats, and sync delegations to a loopback agent the tool
# serves. Every 10 s it scrapes the server's /metrics and prints one line: requests/s, p50/p99,
# failures, resident memory (and the part of it the Go runtime does not hold: SQLite's caches and
# other C allocations), Go heap in use, goroutines, open FDs and the search index's size.
# At the end, for each series, the least-squares slope per 10 minutes over the run's second half
# (the first is warm-up), its noise (sd of the residuals) and a verdict: flat while the rise over
# that half is within 2x the noise, else GROWS. Exits 1 if any series grows. Takes both cores of
# a 2-core machine for the whole run.
# Usage: bench/soak.sh [flags of bench/soak, e.g. -d 1h -every 10s -clients 32]
#   SQLite (a temporary file) by default; AGENTCARDS_BENCH_DIALECT=postgres or mysql uses the
#   server of AGENTCARDS_TEST_POSTGRES_DSN / AGENTCARDS_TEST_MYSQL_DSN (else the local test
#   server), in a schema / database of its own that the run creates and drops.
set -eu
cd "$(dirname "$0")/.."
exec go run ./bench/soak -dialect "${AGENTCARDS_BENCH_DIALECT:-sqlite}" "$@"
