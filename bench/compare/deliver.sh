#!/usr/bin/env bash
# bench/compare/deliver.sh — the deliver comparison: JOBS messages preloaded, two
# worker processes each, every message one HTTPS request to the same fake provider
# (bench provider: its own CA, answers after LATENCY ±20 %), time until none is left.
# herald: `bench deliver` with two `herald run` processes (defaults: adaptive
# concurrency; a third of the messages e-mail through the SendGrid sender, a third SMS through
# the Twilio sender, a third webhooks). River: river/main.go with DELIVER_URL, a worker that POSTs each
# job with Go's HTTP client (an idle connection per worker), MaxWorkers RIVER_WORKERS.
# graphile-worker: graphile/drain.mjs with DELIVER_URL, Node's fetch (keep-alive),
# GRAPHILE_CONCURRENCY jobs at once, batching on. Besides jobs/s: the new TCP
# connections the provider saw per 100 jobs.
#
#   bench/compare/deliver.sh                          (JOBS=10000, LATENCY=100ms)
#   SYSTEMS="herald river" JOBS=20000 bench/compare/deliver.sh
#
# Not part of `make bench`: it needs the module proxy and the npm registry for River
# and graphile-worker on first run, as bench/compare/run.sh does.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
jobs=${JOBS:-10000}
latency=${LATENCY:-100ms}
river_workers=${RIVER_WORKERS:-512}
graphile_concurrency=${GRAPHILE_CONCURRENCY:-512}
systems=${SYSTEMS:-herald river graphile}
server=${DATABASE_URL:-$(tests/devdb.sh up)}
work=$(mktemp -d)
pids=()
provider=
cleanup() {
  for p in "${pids[@]}" $provider; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# url, fresh, drop, stop_workers, json_field
. bench/compare/lib.sh

bench="$work/bench"
go build -o "$bench" ./bench
"$bench" provider -latency "$latency" >"$work/provider" &
provider=$!
for _ in $(seq 100); do [ -s "$work/provider" ] && break; sleep 0.1; done
read -r purl pca <"$work/provider"
conns() { curl -s --cacert "$pca" "$purl/_counts" | sed -E 's/.*"conns":([0-9]+).*/\1/'; }
reset() { curl -s --cacert "$pca" -X POST "$purl/_reset" >/dev/null; }
per100() { printf '%.2f' "$(echo "100 * $1 / $jobs" | bc -l)"; }

herald() {
  echo "herald (bench deliver, 2 runners) …" >&2
  "$bench" -deliver-provider "$purl $pca" -deliver-configs 2 -deliver-messages "$jobs" -json "$work/herald.json" -out "$work" deliver >/dev/null
  drop herald_bench
  printf '%.0f\n' "$(json_field "deliver, 2 runner(s), defaults: messages/s" herald)" >"$work/rate"
  printf '%.2f\n' "$(json_field "deliver, 2 runner(s), defaults: new TCP" herald)" >"$work/conns"
}
river() {
  echo "River (MaxWorkers $river_workers) …" >&2
  [ -x "$work/river" ] || (cd bench/compare && go build -o "$work/river" ./river)
  fresh herald_compare_river
  local db; db=$(url herald_compare_river)
  rm -f "$work/river-ready"
  "$work/river" prepare -db "$db" -jobs "$jobs"
  reset
  for _ in 1 2; do DELIVER_URL=$purl DELIVER_CA_FILE=$pca "$work/river" work -db "$db" -ready "$work/river-ready" -workers "$river_workers" >&2 & pids+=($!); done
  "$work/river" watch -db "$db" -jobs "$jobs" -ready "$work/river-ready" >"$work/rate"
  per100 "$(conns)" >"$work/conns"
  stop_workers
  drop herald_compare_river
}
graphile() {
  echo "graphile-worker (concurrency $graphile_concurrency) …" >&2
  local db; db=$(graphile_prepare herald_compare_graphile)
  reset
  for _ in 1 2; do DELIVER_URL=$purl NODE_EXTRA_CA_CERTS=$pca node bench/compare/graphile/drain.mjs work "$db" "$graphile_concurrency" "$work/graphile-ready" >/dev/null 2>&1 & pids+=($!); done
  node bench/compare/graphile/drain.mjs watch "$db" "$jobs" "$work/graphile-ready" >"$work/rate"
  per100 "$(conns)" >"$work/conns"
  stop_workers
  drop herald_compare_graphile
}

printf '\n| deliver %s messages, provider answering in %s, 2 worker processes | jobs/s | new connections per 100 jobs |\n|---|---|---|\n' "$jobs" "$latency" >"$work/table"
for s in $systems; do
  case $s in herald | river | graphile) ;; *) echo "unknown system $s (herald, river, graphile)" >&2; exit 2 ;; esac
  "$s"
  printf '| %s | %s | %s |\n' "$s" "$(cat "$work/rate")" "$(cat "$work/conns")" >>"$work/table"
done
cat "$work/table"
