#!/bin/sh
# Writes under load (issue 11), from outside: the real binary on a loopback port, N concurrent
# HTTP clients (1, 16, 64) registering a card and patching it in turn, in a tenant with no index
# and in one of 2,000 cards whose index a search loaded, against a baseline measured in the same
# run and database: the same card, change-feed and audit rows written with plain database/sql and the
# server's connection settings, one transaction per write. Server and baseline phases alternate
# over the rounds. Then 64 clients send 70% free-text searches and 30% writes to a loaded tenant,
# and the same mix again with the writes made by the baseline (the database's floor under that
# load).
# Prints writes/s, p50/p99 and server/baseline per phase, and each goal of the issue beside its
# measure: 16 writers >= 0.5x the baseline (SQLite, Postgres); mixed write p99 <= 2x search p99;
# lone writer p50 loaded <= 1.5x no index. About 2 minutes on 2 cores.
# Usage: bench/writes.sh [flags of bench/writeload, e.g. -d 5s -rounds 3]
#   SQLite (a temporary file) by default; AGENTCARDS_BENCH_DIALECT=postgres or mysql uses the
#   server of AGENTCARDS_TEST_POSTGRES_DSN / AGENTCARDS_TEST_MYSQL_DSN (else the local test
#   server), in a schema / database of its own that the run creates and drops.
set -eu
cd "$(dirname "$0")/.."
exec go run ./bench/writeload -dialect "${AGENTCARDS_BENCH_DIALECT:-sqlite}" "$@"
