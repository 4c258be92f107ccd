#!/bin/sh
# Delegation overhead: POST /v1/tenants/{t}/delegations (sync) against calling a loopback agent
# that answers at once directly, 16 concurrent callers, both measured in the same run. Prints the
# throughput ratio (goal >= 0.5) and the latency the server adds at p50/p99. The same run also
# measures a relay that only forwards the request to the agent: relay-ratio (relay / direct) is
# the ceiling of this machine for any server in the middle, of-relay is delegation / relay.
# cpu-of-relay is the same comparison in CPU time per call (relay / delegation), steadier than
# of-relay when other work shares the machine.
# Usage: bench/delegation.sh [N]   (SQLite; AGENTCARDS_BENCH_DIALECT=postgres with
# AGENTCARDS_TEST_POSTGRES_DSN set measures Postgres instead)
set -eu
cd "$(dirname "$0")/.."
go test -run '^$' -bench '^BenchmarkDelegationOverhead$' -benchtime "${1:-2000}x" -count "${COUNT:-3}" ./web/
