#!/usr/bin/env bash
# bench/compare/run.sh — the drain of the benchmark issue, herald against River and
# graphile-worker on the same server in the same run: JOBS no-op jobs preloaded, two
# worker processes each, time until none is left. Every clock starts when the
# workers have started, not when their processes are launched: herald's when both
# runners listen (the bench holds the channel paused until then), River's and
# graphile-worker's when the first of their two processes has started (a file it
# creates), so process start-up is no part of any figure.
#
#   bench/compare/run.sh                   (JOBS=200000; DATABASE_URL or the local cluster)
#   RIVER_WORKERS=1000 GRAPHILE_CONCURRENCY=100 bench/compare/run.sh
#
# herald: `go run ./bench drain` (2 `herald run` processes, noop sender, batch 1000,
# leases, fencing and receipts on). River: 2 processes of river/main.go (a no-op
# worker, MaxWorkers RIVER_WORKERS). graphile-worker 0.18: 2 processes of
# graphile/drain.mjs with its batching on (local queue, batched completion),
# GRAPHILE_CONCURRENCY jobs at once each. Each system gets its own fresh database
# on the server. Not part of `make bench`: it needs the module proxy and the npm
# registry for River and graphile-worker (a separate Go module here, and npm).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
jobs=${JOBS:-200000}
river_workers=${RIVER_WORKERS:-1000}
graphile_concurrency=${GRAPHILE_CONCURRENCY:-100}
server=${DATABASE_URL:-$(tests/devdb.sh up)}
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# url DB: the server's URL with its database replaced by DB.
url() { sed -E "s#^([a-z]+://[^/]*)/[^?]*#\1/$1#" <<<"$server"; }
fresh() { psql -q "$server" -c "DROP DATABASE IF EXISTS $1 WITH (FORCE)" -c "CREATE DATABASE $1"; }
stop_workers() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pids=()
}

echo "herald (go run ./bench drain) …" >&2
go run ./bench -drain-messages "$jobs" -json "$work/herald.json" -out "$work" drain >/dev/null
herald=$(grep -m1 -o '"herald": [0-9.]*' "$work/herald.json" | grep -o '[0-9.]*$')

echo "River …" >&2
(cd bench/compare && go build -o "$work/river" ./river)
fresh herald_compare_river
db=$(url herald_compare_river)
"$work/river" prepare -db "$db" -jobs "$jobs"
for _ in 1 2; do "$work/river" work -db "$db" -workers "$river_workers" -ready "$work/river-ready" & pids+=($!); done
river=$("$work/river" watch -db "$db" -jobs "$jobs" -ready "$work/river-ready")
stop_workers

echo "graphile-worker …" >&2
(cd bench/compare/graphile && npm ci --silent --no-audit --no-fund)
fresh herald_compare_graphile
db=$(url herald_compare_graphile)
node bench/compare/graphile/drain.mjs prepare "$db" "$jobs"
for _ in 1 2; do node bench/compare/graphile/drain.mjs work "$db" "$graphile_concurrency" "$work/graphile-ready" >/dev/null 2>&1 & pids+=($!); done
graphile=$(node bench/compare/graphile/drain.mjs watch "$db" "$jobs" "$work/graphile-ready")
stop_workers

printf '\n| drain of %s no-op jobs, 2 worker processes | jobs/s | herald / it |\n|---|---|---|\n' "$jobs"
printf '| herald (leases, fencing, receipts) | %.0f | — |\n' "$herald"
printf '| River (MaxWorkers %s) | %s | %.2f |\n' "$river_workers" "$river" "$(echo "$herald / $river" | bc -l)"
printf '| graphile-worker 0.18, batching on (concurrency %s) | %s | %.2f |\n' "$graphile_concurrency" "$graphile" "$(echo "$herald / $graphile" | bc -l)"
