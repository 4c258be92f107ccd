#!/bin/sh
# Warm start of the search indexes, from outside: the real binary on a loopback port, a tenant of
# 10k and one of 100k generated cards (each in a database of its own) searched once, then restarts:
# the first free-text search sent as soon as the port answers, with warm start (search.warmWindow
# 24h) and without (0), timed from the start of the process and from the port's first answer; the
# build's length (/ready's first 200 with search.warmReady); and, with the server stopped, a plain
# database/sql scan of the tenant's card documents (select, decode, case-insensitive substring
# match) as the baseline. The modes alternate within each round.
# Prints p50 / max over the rounds, first search / scan, and the goals of the issue: 10k first
# search <= 2x the SQL scan; 100k first search within the 3 s build. About 2 minutes on 2 cores.
# Usage: bench/warmstart.sh [flags of bench/warmstart, e.g. -sizes 10000 -rounds 5]
#   SQLite (a temporary file) by default; AGENTCARDS_BENCH_DIALECT=postgres or mysql uses the
#   server of AGENTCARDS_TEST_POSTGRES_DSN / AGENTCARDS_TEST_MYSQL_DSN (else the local test
#   server), in a schema / database of its own per size that the run creates and drops.
set -eu
cd "$(dirname "$0")/.."
exec go run ./bench/warmstart -dialect "${AGENTCARDS_BENCH_DIALECT:-sqlite}" "$@"
