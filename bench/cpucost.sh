#!/usr/bin/env bash
# bench/cpucost.sh — CPU cost per transaction of SQL scripts, for finding where
# herald's time goes (the Go bench measures throughput; this measures work).
#
# Usage: bench/cpucost.sh [-n TXNS] [-r ROUNDS] [-s SETUP_SQL] script.sql ...
#
# For each round and each script in turn: empty the bench tables, run SETUP_SQL,
# warm up, then run TXNS transactions per client with pgbench (-M prepared, 4
# clients, synchronous_commit off so that no one waits on the disk) and print the
# machine's busy CPU time (user + system + irq, from /proc/stat, every process:
# PostgreSQL and pgbench) divided by the transactions. Busy time, unlike
# throughput, barely moves when the shared machine's disk or neighbours slow a run
# down, so differences of ~5 µs show up. Run `make bench` (or go run ./bench
# enqueue-single) once first: it creates the herald_bench database on the server
# (DATABASE_URL, or the local cluster) with herald and public.bare.
set -euo pipefail
n=5000 rounds=2 setup="SELECT 1"
while getopts "n:r:s:" opt; do
  case $opt in
  n) n=$OPTARG ;;
  r) rounds=$OPTARG ;;
  s) setup=$OPTARG ;;
  *) sed -n 4,15p "$0" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || { sed -n 4,15p "$0" >&2; exit 2; }
server=${DATABASE_URL:-$(tests/devdb.sh up)}
url=$(sed -E 's#/[^/?]*(\?|$)#/herald_bench\1#' <<<"${server#*://}")
url="${server%%://*}://$url"
pgbench=$(command -v pgbench || ls /usr/lib/postgresql/*/bin/pgbench | tail -1)
busy() { awk '/^cpu /{print $2+$3+$4+$7+$8}' /proc/stat; }
hz=$(getconf CLK_TCK)
export PGOPTIONS="-c synchronous_commit=off"
for r in $(seq "$rounds"); do
  for script in "$@"; do
    psql -q "$url" -c "TRUNCATE herald.messages, herald.log_statements, public.bare" -c "$setup" >/dev/null
    "$pgbench" -n -M prepared -c 4 -j 2 -t 200 -f "$script" "$url" >/dev/null 2>&1
    b0=$(busy)
    "$pgbench" -n -M prepared -c 4 -j 2 -t "$n" -f "$script" "$url" >/dev/null
    b1=$(busy)
    echo "round $r  $(basename "$script"): $(( (b1 - b0) * 1000000 / hz / (4 * n) )) µs CPU per transaction"
  done
done
