#!/bin/sh
# Card signatures: signing a 3 KB card (SignDetached) and checking one as an import does (JCS form,
# header, key, signature), each against the bare key operation on the same bytes in the same run.
# Prints jws/crypto, what the JOSE layer and canonicalization cost on top of the cryptography.
# Usage: bench/jws.sh [COUNT]
set -eu
cd "$(dirname "$0")/.."
out=$(mktemp)
trap 'rm -f "$out"' EXIT
go test -run '^$' -bench '^BenchmarkSignDetached$' -count "${1:-6}" ./authz/token/ | grep '^Benchmark' >>"$out"
go test -run '^$' -bench '^BenchmarkVerifySignature$' -count "${1:-6}" ./cards/a2a/ | grep '^Benchmark' >>"$out"
# Medians per benchmark, then jws/crypto per operation and algorithm.
awk '{ split($1, p, "/"); sub(/-[0-9]+$/, "", p[3]); k = p[1] "/" p[2] SUBSEP p[3]; v[k, ++n[k]] = $3; keys[k] = 1 }
END {
	for (k in keys) {
		c = n[k]
		for (i = 1; i <= c; i++) a[i] = v[k, i]
		for (i = 2; i <= c; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
		med[k] = c % 2 ? a[(c+1)/2] : (a[c/2] + a[c/2+1]) / 2
	}
	for (k in keys) {
		split(k, q, SUBSEP)
		if (q[2] == "jws") printf "%-32s jws %8.0f ns  crypto %8.0f ns  jws/crypto %.2f\n", q[1], med[k], med[q[1] SUBSEP "crypto"], med[k] / med[q[1] SUBSEP "crypto"]
	}
}' "$out" | sort
