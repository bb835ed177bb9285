#!/usr/bin/env bash
# bench/compare/run.sh — the drain of the benchmark issue, herald against River,
# graphile-worker and pgmq on the same server in the same run: JOBS no-op jobs
# preloaded, two worker processes each, time until none is left. Every clock starts
# when the workers have started, not when their processes are launched: herald's
# when both runners listen (the bench holds the channel paused until then), the
# others' when the first of their two processes has started (a file it creates), so
# process start-up is no part of any figure.
#
# Besides each drain's rate the table gives the CPU it cost per job, read by the
# bench's `cpu` command with the drain scenario's accounting: the server's
# processes (where the server runs on this machine) and the worker processes', from
# just before the clock starts to the queue's end (herald's workers: its two runners
# and the bench's watcher, as `make bench` counts them). On a machine the drain keeps busy, the CPU per job is what decides the
# rate. herald's run also drains the raw SQL loop of `make bench`, which gets a row
# of its own (its client: the bench's two loop connections).
#
# Every drain starts alike: the preloaded table vacuumed and analysed, a CHECKPOINT
# taken, and no other system's database left on the server (each is dropped after
# its drain, and any left by an earlier run at the start), so that no drain pays for
# another's autovacuum or dirty buffers.
#
#   bench/compare/run.sh                   (JOBS=200000; DATABASE_URL or the local cluster)
#   RIVER_WORKERS=1000 GRAPHILE_CONCURRENCY=100 bench/compare/run.sh
#   SYSTEMS="herald pgmq" ROUNDS=3 bench/compare/run.sh   (some systems, alternated ROUNDS times)
#
# herald: the bench's drain, `./bench` built once (2 `herald run` processes, noop sender, batch 1000,
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

# url, fresh, drop, stop_workers, json_field
. bench/compare/lib.sh
# checkpoint: writes the preload's dirty buffers before a drain's clock starts, as
# the herald bench does after its preload, so that no drain pays for them.
checkpoint() { psql -q "$server" -c "CHECKPOINT"; }

# The herald bench, built once: its drain is herald's row, and its `cpu` command
# reads the CPU used so far with the drain scenario's accounting (the server's
# processes, ended ones included, when the server runs here; and given processes').
bench="$work/bench"
go build -o "$bench" ./bench
# per_job MICROSECONDS: over the drain's jobs, to one decimal ("—" for "-").
per_job() { if [ "$1" = - ]; then echo "—"; else printf '%.1f' "$(echo "$1 / $jobs" | bc -l)"; fi; }

# One system's drain, run in this shell (its workers are in pids for the EXIT trap):
# writes its rate (jobs/s) to $work/rate, or "—" for pgmq when the server lacks it,
# and the server's and the workers' CPU per job to $work/server and $work/client
# ("—" when not measured). herald's also writes the raw SQL loop's three figures to
# $work/loop.
herald() {
  echo "herald (the bench's drain) …" >&2
  "$bench" -drain-messages "$jobs" -drain-rounds 1 -json "$work/herald.json" -out "$work" drain >/dev/null
  drop herald_bench
  json_field "drain: $jobs messages" herald >"$work/rate"
  local side s c
  for side in herald baseline; do
    s=$(json_field "drain: database server CPU" "$side")
    c=$(json_field "drain: client CPU" "$side")
    if [ -n "$s" ]; then s=$(printf '%.1f' "$s"); else s="—"; fi
    if [ -n "$c" ]; then c=$(printf '%.1f' "$c"); else c="—"; fi
    if [ "$side" = herald ]; then
      echo "$s" >"$work/server"
      echo "$c" >"$work/client"
    else
      echo "$(json_field "drain: $jobs messages" baseline) $s $c" >"$work/loop"
    fi
  done
}
# measured COMMAND…: runs the watch COMMAND while the workers in pids drain, and
# writes the server's and the workers' CPU per job.
measured() {
  local s0 c0 s1 c1
  read -r s0 c0 < <("$bench" cpu "${pids[@]}")
  "$@" >"$work/rate"
  read -r s1 c1 < <("$bench" cpu "${pids[@]}")
  if [ "$s0" = - ]; then per_job - >"$work/server"; else per_job $((s1 - s0)) >"$work/server"; fi
  per_job $((c1 - c0)) >"$work/client"
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
  checkpoint
  for _ in 1 2; do "$work/$name" work -db "$db" -ready "$work/$name-ready" "$@" >&2 & pids+=($!); done
  measured "$work/$name" watch -db "$db" -jobs "$jobs" -ready "$work/$name-ready"
  stop_workers
  drop "herald_compare_$name"
}
river() {
  echo "River …" >&2
  go_system river -workers "$river_workers"
}
graphile() {
  echo "graphile-worker …" >&2
  local db; db=$(graphile_prepare herald_compare_graphile)
  checkpoint
  for _ in 1 2; do node bench/compare/graphile/drain.mjs work "$db" "$graphile_concurrency" "$work/graphile-ready" >/dev/null 2>&1 & pids+=($!); done
  measured node bench/compare/graphile/drain.mjs watch "$db" "$jobs" "$work/graphile-ready"
  stop_workers
  drop herald_compare_graphile
}
pgmq() {
  if [ "$(psql -qAt "$server" -c "SELECT count(*) FROM pg_available_extensions WHERE name = 'pgmq'")" = 0 ]; then
    echo "pgmq: the server has no pgmq extension (skipped)" >&2
    echo "—" | tee "$work/server" "$work/client" >"$work/rate"
    return
  fi
  echo "pgmq …" >&2
  go_system pgmq -batch "$pgmq_batch"
}
label() {
  case $1 in
  herald) echo "herald (leases, fencing, receipts)" ;;
  loop) echo "raw SQL loop (make bench's drain baseline, in herald's run)" ;;
  river) echo "River (MaxWorkers $river_workers)" ;;
  graphile) echo "graphile-worker 0.18, batching on (concurrency $graphile_concurrency)" ;;
  pgmq) echo "pgmq read $pgmq_batch + delete" ;;
  esac
}

for d in herald_bench herald_compare_river herald_compare_graphile herald_compare_pgmq; do drop "$d"; done

declare -A rate server client
for r in $(seq "$rounds"); do
  for s in $systems; do
    case $s in herald | river | graphile | pgmq) ;; *) echo "unknown system $s (herald, river, graphile, pgmq)" >&2; exit 2 ;; esac
    "$s"
    rate[$s,$r]=$(cat "$work/rate")
    server[$s,$r]=$(cat "$work/server")
    client[$s,$r]=$(cat "$work/client")
    if [ "$s" = herald ]; then
      read -r "rate[loop,$r]" "server[loop,$r]" "client[loop,$r]" <"$work/loop"
    fi
  done
done

shown=$systems
case " $systems " in *" herald "*) shown="herald loop ${systems/herald/}" ;; esac
printf '\n| drain of %s no-op jobs, 2 worker processes | round | jobs/s | herald / it | server CPU µs/job | workers'"'"' CPU µs/job |\n|---|---|---|---|---|---|\n' "$jobs"
for r in $(seq "$rounds"); do
  for s in $shown; do
    v=${rate[$s,$r]}
    ratio="—"
    if [ "$s" != herald ] && [ -n "${rate[herald,$r]:-}" ] && [ "$v" != "—" ]; then
      ratio=$(printf '%.2f' "$(echo "${rate[herald,$r]} / $v" | bc -l)")
    fi
    [ "$v" = "—" ] || v=$(printf '%.0f' "$v")
    printf '| %s | %s | %s | %s | %s | %s |\n' "$(label "$s")" "$r" "$v" "$ratio" "${server[$s,$r]}" "${client[$s,$r]}"
  done
done
