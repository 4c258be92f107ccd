#!/bin/sh
# Soak (not in CI): the real binary under 30 minutes of mixed load, watched for leaks and
# slowdowns. 32 closed-loop clients in 2 tenants of 2,000 cards send free-text, capability, tag
# and paged searches, card GETs, PATCH and PUT of existing cards, registrations and deletions of
# new cards (their number stays bounded), heartbeats, and sync delegations to a loopback agent
# the tool serves. Every 10 s it scrapes the server's /metrics and prints one line: requests/s,
# p50/p99, failures, resident memory (and the part of it the Go runtime does not hold: SQLite's
# caches and other C allocations), Go heap in use, goroutines, open FDs, the search index's size
# and the machine's load average (other work on the machine slows the run too). At the end, for each series, the least-squares slope per 10 minutes over the run's second
# half (the first is warm-up), its noise (sd of the residuals) and a verdict: flat while the
# change over that half is within 2x the noise, else GROWS (memory and the like, the p99) or
# FALLS (requests/s). Exits 1 if any series grows or falls so. On Postgres it also prints what
# the run cost each table: the share of HOT updates, dead rows per update and per minute,
# sequential scans, growth. Takes both cores of a 2-core machine for the whole run.
# Usage: bench/soak.sh [flags of bench/soak, e.g. -d 1h -every 10s -clients 32 -dsn URL]
#   SQLite (a temporary file) by default. AGENTCARDS_BENCH_DIALECT=postgres runs on a Postgres
#   cluster the run creates with default settings (autovacuum on, as in production; it needs the
#   Postgres server binaries and a postgres user), or on the server of -dsn (e.g. the shared test
#   server, to compare). AGENTCARDS_BENCH_DIALECT=mysql uses the server of -dsn, else
#   AGENTCARDS_TEST_MYSQL_DSN, else the local test server. On a server the run works in a schema /
#   database of its own that it creates and drops.
set -eu
cd "$(dirname "$0")/.."
exec go run ./bench/soak -dialect "${AGENTCARDS_BENCH_DIALECT:-sqlite}" "$@"
