#!/usr/bin/env bash
# Search benchmarks (issue 3). Prints each table; ratios are computed from the same run.
#   bench/search.sh            # everything (about 10 minutes on 2 cores)
# Needs a local Postgres for the replica-delay part (AGENTCARDS_TEST_POSTGRES_DSN or the default).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== 1. the in-memory index alone, 10k and 100k cards (p50/p99 per query)"
go test -run '^$' -bench 'BenchmarkIndexSearch' -benchtime 2000x ./cards/search/index/ | grep '^Benchmark'

echo "== 4. building the index of 100k cards: from decoded cards (and its heap), and from SQLite as a first search does"
go test -run '^$' -bench 'BenchmarkIndexBuild$' -benchtime 1x ./cards/search/index/ | grep '^Benchmark'
go test -run '^$' -bench 'BenchmarkIndexBuildFromStore' -benchtime 1x -timeout 30m ./cards/search/ | grep '^Benchmark'

echo "== 2. search.index memory vs none, 10k cards in SQLite, through the service"
go test -run '^$' -bench 'BenchmarkSearchModes' -benchtime 20x ./cards/search/ | grep '^Benchmark' | tee /tmp/agentcards-modes.txt
awk '/BenchmarkSearchModes\/memory/ { split($1, a, "/"); q = a[3]; m[q] = $3 }
     /BenchmarkSearchModes\/none/   { split($1, a, "/"); q = a[3]; n[q] = $3 }
     END { for (q in m) if (q in n) printf "none/memory ratio %-24s %8.0fx\n", q, n[q] / m[q] }' /tmp/agentcards-modes.txt

echo "== 3. HTTP: search (limit=10, a capability filter) vs /health on the same server"
go run ./bench/httpload -cards 10000 -c 16 -d 4s -rounds 3

echo "== 5. two servers on one Postgres: write on A, found on B"
go run ./bench/replicadelay -dsn "${AGENTCARDS_TEST_POSTGRES_DSN:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}" -n 100
