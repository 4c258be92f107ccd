#!/bin/sh
# Enforce latency with 1,000 policies in one tenant, against 10 policies in the same run: cold
# (a new question each time) and warm (a repeated one, answered by the decision memo).
# Usage: bench/enforce.sh [N]
set -eu
cd "$(dirname "$0")/.."
go test -run '^$' -bench '^BenchmarkEnforcePolicies$' -benchtime "${1:-2000}x" -count "${COUNT:-3}" ./authz/policy/
