#!/usr/bin/env bash
# bench/compare/run.sh — the drain of the benchmark issue, herald against River,
# graphile-worker and pgmq on the same server in the same run: JOBS no-op jobs
# preloaded, two worker processes each, time until none is left. Every clock starts
# when the workers have started, not when their processes are launched: herald's
# when both runners listen (the bench holds the channel paused until then), the
# others' when the first of their two processes has started (a file it creates), so
# process start-up is no part of any figure.
#
#   bench/compare/run.sh                   (JOBS=200000; DATABASE_URL or the local cluster)
#   RIVER_WORKERS=1000 GRAPHILE_CONCURRENCY=100 bench/compare/run.sh
#   SYSTEMS="herald pgmq" ROUNDS=3 bench/compare/run.sh   (some systems, alternated ROUNDS times)
#
# herald: `go run ./bench drain` (2 `herald run` processes, noop sender, batch 1000,
# leases, fencing and receipts on). River: 2 processes of river/main.go (a no-op
# worker, MaxWorkers RIVER_WORKERS). graphile-worker 0.18: 2 processes of
# graphile/drain.mjs with its batching on (local queue, batched completion),
# GRAPHILE_CONCURRENCY jobs at once each. pgmq: 2 processes of pgmq/main.go, each
# pgmq.read of PGMQ_BATCH messages then one pgmq.delete of them (the message is gone:
# no receipt, no log); it needs the pgmq extension installed on the server (its
# row says so and the others still run when it is not). Each system gets its own
# fresh database on the server. Not part of `make bench`: it needs the module proxy
# and the npm registry for River and graphile-worker (a separate Go module here, and
# npm), and pgmq on the server.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
jobs=${JOBS:-200000}
river_workers=${RIVER_WORKERS:-1000}
graphile_concurrency=${GRAPHILE_CONCURRENCY:-100}
pgmq_batch=${PGMQ_BATCH:-1000}
systems=${SYSTEMS:-herald river graphile pgmq}
rounds=${ROUNDS:-1}
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

# One system's drain, run in this shell (its workers are in pids for the EXIT trap):
# writes its rate (jobs/s) to $work/rate, or "—" for pgmq when the server lacks it.
herald() {
  echo "herald (go run ./bench drain) …" >&2
  go run ./bench -drain-messages "$jobs" -drain-rounds 1 -json "$work/herald.json" -out "$work" drain >/dev/null
  grep -m1 -o '"herald": [0-9.]*' "$work/herald.json" | grep -o '[0-9.]*$' >"$work/rate"
}
# go_system NAME FLAG…: the drain of the Go command ./NAME (bench/compare/drain's
# command line), its two workers given FLAG….
go_system() {
  local name=$1 db
  shift
  [ -x "$work/$name" ] || (cd bench/compare && go build -o "$work/$name" "./$name")
  fresh "herald_compare_$name"
  db=$(url "herald_compare_$name")
  rm -f "$work/$name-ready"
  "$work/$name" prepare -db "$db" -jobs "$jobs"
  for _ in 1 2; do "$work/$name" work -db "$db" -ready "$work/$name-ready" "$@" >&2 & pids+=($!); done
  "$work/$name" watch -db "$db" -jobs "$jobs" -ready "$work/$name-ready" >"$work/rate"
  stop_workers
}
river() {
  echo "River …" >&2
  go_system river -workers "$river_workers"
}
graphile() {
  echo "graphile-worker …" >&2
  [ -d bench/compare/graphile/node_modules/graphile-worker ] || (cd bench/compare/graphile && npm ci --silent --no-audit --no-fund)
  fresh herald_compare_graphile
  local db; db=$(url herald_compare_graphile)
  rm -f "$work/graphile-ready"
  node bench/compare/graphile/drain.mjs prepare "$db" "$jobs"
  for _ in 1 2; do node bench/compare/graphile/drain.mjs work "$db" "$graphile_concurrency" "$work/graphile-ready" >/dev/null 2>&1 & pids+=($!); done
  node bench/compare/graphile/drain.mjs watch "$db" "$jobs" "$work/graphile-ready" >"$work/rate"
  stop_workers
}
pgmq() {
  if [ "$(psql -qAt "$server" -c "SELECT count(*) FROM pg_available_extensions WHERE name = 'pgmq'")" = 0 ]; then
    echo "pgmq: the server has no pgmq extension (skipped)" >&2
    echo "—" >"$work/rate"
    return
  fi
  echo "pgmq …" >&2
  go_system pgmq -batch "$pgmq_batch"
}
label() {
  case $1 in
  herald) echo "herald (leases, fencing, receipts)" ;;
  river) echo "River (MaxWorkers $river_workers)" ;;
  graphile) echo "graphile-worker 0.18, batching on (concurrency $graphile_concurrency)" ;;
  pgmq) echo "pgmq read $pgmq_batch + delete" ;;
  esac
}

declare -A rate
for r in $(seq "$rounds"); do
  for s in $systems; do
    case $s in herald | river | graphile | pgmq) ;; *) echo "unknown system $s (herald, river, graphile, pgmq)" >&2; exit 2 ;; esac
    "$s"
    rate[$s,$r]=$(cat "$work/rate")
  done
done

printf '\n| drain of %s no-op jobs, 2 worker processes | round | jobs/s | herald / it |\n|---|---|---|---|\n' "$jobs"
for r in $(seq "$rounds"); do
  for s in $systems; do
    v=${rate[$s,$r]}
    ratio="—"
    if [ "$s" != herald ] && [ -n "${rate[herald,$r]:-}" ] && [ "$v" != "—" ]; then
      ratio=$(printf '%.2f' "$(echo "${rate[herald,$r]} / $v" | bc -l)")
    fi
    [ "$v" = "—" ] || v=$(printf '%.0f' "$v")
    printf '| %s | %s | %s | %s |\n' "$(label "$s")" "$r" "$v" "$ratio"
  done
done
