#!/usr/bin/env bash
# Discovery against agentkit-mesh: starts agentkit-mesh's HTTP server on 127.0.0.1 with a fresh
# database, then runs bench/meshdiscover, which starts agentcards on SQLite, registers the same
# generated agents in both and times the same free-text queries on each.
#   bench/meshdiscover.sh /path/to/agentkit-mesh [meshdiscover flags, e.g. -cards 10000 -rounds 3]
# The checkout needs its node_modules (npm ci; better-sqlite3 builds from source when its prebuilt
# binary cannot be downloaded). Its dist/ is built with its own tsc if absent.
set -euo pipefail
mesh=$(cd "${1:?usage: $0 /path/to/agentkit-mesh [flags]}" && pwd)
shift
cd "$(dirname "$0")/.."
[ -d "$mesh/node_modules/better-sqlite3" ] || { echo "$mesh: no node_modules (run npm ci there)" >&2; exit 1; }
[ -f "$mesh/dist/index.js" ] || (cd "$mesh" && npx tsc)

work=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
# agentkit-mesh's server listens on every interface and takes no host; this preload makes its
# listen() bind 127.0.0.1 only.
cat > "$work/loopback.cjs" <<'JS'
const net = require('net');
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === 'number' && typeof args[1] !== 'string') args[1] = '127.0.0.1';
  return listen.apply(this, args);
};
JS
# Its log (a line per registration and per discovery, as it ships) goes to a file.
node -r "$work/loopback.cjs" "$mesh/dist/index.js" serve --port 0 --db "$work/mesh.db" > "$work/mesh.log" 2>&1 &
pid=$!
port=
for _ in $(seq 100); do
  port=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$work/mesh.log")
  [ -n "$port" ] && break
  kill -0 "$pid" 2>/dev/null || { cat "$work/mesh.log" >&2; exit 1; }
  sleep 0.1
done
[ -n "$port" ] || { echo "agentkit-mesh did not start" >&2; cat "$work/mesh.log" >&2; exit 1; }
echo "agentkit-mesh $(git -C "$mesh" rev-parse --short HEAD 2>/dev/null || echo '?') on 127.0.0.1:$port, node $(node --version); load average: $(cut -d' ' -f1-3 /proc/loadavg)"
go run ./bench/meshdiscover -mesh "http://127.0.0.1:$port" "$@"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
