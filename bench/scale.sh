#!/bin/sh
# Scale (issue 43, goals 1 and 2): one tenant of a million cards, and ten thousand tenants under a
# memory budget, each goal printed beside its figure. About 35 minutes on 2 cores, most of it
# registering the cards (kept with AGENTCARDS_BENCH_KEEP=<dir> for the next run).
#   1. the index alone, in process, at AGENTCARDS_BENCH_CARDS cards (1,000,000): its build and
#      heap, and p50/p99 of each kind of search (goals: heap <= 600 MiB; free text of 1-3 words
#      p99 <= 5 ms; filters p99 <= 2 ms);
#   2. one tenant over HTTP (bench/bigtenant): the first search after the registrations, the
#      build from the cards and the read-back from the snapshot (/ready), RSS, and searches at
#      16 clients beside GET /health (goals: 2 s, 30 s, 5 s, 1.5 GiB, 10 ms, 2 ms);
#   3. 10,000 tenants of 100 cards under a budget that holds a tenth of them (bench/tenants).
# Usage: bench/scale.sh [1|2|3]...   (default: all three)
set -eu
cd "$(dirname "$0")/.."
cards="${AGENTCARDS_BENCH_CARDS:-1000000}"
parts="${*:-1 2 3}"
for part in $parts; do
	case "$part" in
	1)
		echo "== 1. the index alone, $cards cards (p50/p99 per query; goals: heap <= 600 MiB, q p99 <= 5 ms, filters p99 <= 2 ms)"
		AGENTCARDS_BENCH_CARDS="$cards" go test -run '^$' -bench 'BenchmarkIndexBuild$' -benchtime 1x -timeout 60m ./cards/search/index/ | grep '^Benchmark'
		AGENTCARDS_BENCH_CARDS="$cards" go test -run '^$' -bench 'BenchmarkIndexSearch' -benchtime 500x -timeout 60m ./cards/search/index/ | grep '^Benchmark'
		;;
	2)
		echo "== 2. one tenant of $cards cards over HTTP"
		if [ -n "${AGENTCARDS_BENCH_KEEP:-}" ]; then
			go run ./bench/bigtenant -cards "$cards" -keep "$AGENTCARDS_BENCH_KEEP"
		else
			go run ./bench/bigtenant -cards "$cards"
		fi
		;;
	3)
		echo "== 3. 10,000 tenants of 100 cards under a memory budget"
		go run ./bench/tenants -tenants 10000 -cards 100 -searches 10000
		;;
	*)
		echo "scale.sh: unknown part $part (1, 2 or 3)" >&2
		exit 2
		;;
	esac
done
