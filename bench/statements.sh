#!/usr/bin/env bash
# bench/statements.sh — the database time of draining 1,000 messages, statement by
# statement, without a client or a network in the figure: herald's claim_batch +
# complete; the raw SQL loop of `make bench`'s drain (a CTE claim of 1,000
# FOR UPDATE SKIP LOCKED, then an UPDATE to sent) on public.bare, the same-shaped
# table without triggers and with herald's indexes (the drain's baseline until
# release 14, `-drain-baseline herald` now); the same claim + bench.complete_delete, a prototype that deletes the row
# instead of marking it 'sent' (bench/sql/statements/complete_delete.sql, not part of
# herald); and, when the server offers the pgmq extension, pgmq.read + pgmq.delete
# (the message is gone) and pgmq.read + pgmq.archive (pgmq's way of keeping a record).
#
#   bench/statements.sh                  (ROUNDS=3 PRELOAD=200000; DATABASE_URL or the local cluster)
#   ROUNDS=5 bench/statements.sh
#
# Each run preloads PRELOAD messages afresh (then VACUUM ANALYZE and CHECKPOINT), and
# one pgbench client claims 1,000 and reports them, PRELOAD/1,000 - 1 times (every
# claim full). The variants alternate, ROUNDS times. It prints each statement's mean
# latency per run, then per variant the median over the rounds of the two statements'
# sum and of herald's throughput over the variant's (the variant's sum over
# herald's in the same round): below 1 herald is slower. Scripts: bench/sql/statements/*.sql. It works in its own
# database, herald_statements, recreated on every run; pgmq must be installed on the
# server (its files in PostgreSQL's extension folder) for its two variants.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
rounds=${ROUNDS:-3}
preload=${PRELOAD:-200000}
[ "$preload" -ge 2000 ] || { echo "PRELOAD must be at least 2000" >&2; exit 2; }
preload=$((preload / 1000 * 1000)) # whole claims of 1,000, the same for every variant
[ "$rounds" -ge 1 ] || { echo "ROUNDS must be at least 1" >&2; exit 2; }
bin=$(pg_config --bindir 2>/dev/null || true)
[ -x "$bin/pgbench" ] || bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
server=${DATABASE_URL:-$(tests/devdb.sh up)}
db=$(sed -E "s#^([a-z]+://[^/]*)/[^?]*#\1/herald_statements#" <<<"$server")
scripts=bench/sql/statements
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

psql -qX "$server" -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS herald_statements WITH (FORCE)" -c "CREATE DATABASE herald_statements"
DATABASE_URL=$db go run ./cmd/herald migrate >/dev/null
psql -qX "$db" -v ON_ERROR_STOP=1 -f "$scripts/complete_delete.sql" \
  -c "CREATE TABLE public.bare (LIKE herald.messages INCLUDING ALL)" >/dev/null
variants="herald bare herald-delete"
if [ "$(psql -qXAt "$db" -c "SELECT count(*) FROM pg_available_extensions WHERE name = 'pgmq'")" = 1 ]; then
  psql -qX "$db" -c "CREATE EXTENSION pgmq" -c "SELECT pgmq.create('bench')" >/dev/null
  variants="$variants pgmq-delete pgmq-archive"
else
  echo "pgmq: not available on this server; its variants are skipped" >&2
fi

# load VARIANT: PRELOAD fresh messages in the variant's queue, its statistics and a
# checkpoint behind them.
load() {
  case $1 in
  herald*)
    psql -qX "$db" -v ON_ERROR_STOP=1 -c "TRUNCATE herald.messages, herald.log_statements" \
      -c "SELECT count(herald.enqueue_batch((SELECT jsonb_agg(jsonb_build_object('channel', 'email',
            'recipient', 'u' || g || '@example.com', 'payload', '{\"subject\":\"Hi\",\"text\":\"Hello\"}'::jsonb))
          FROM generate_series(1, 1000) g))) FROM generate_series(1, $((preload / 1000)))" >/dev/null
    # The accepted events get their offsets now, as in `make bench`'s drain.
    while [ "$(psql -qXAt "$db" -c "SELECT herald.log_sequence(100000)")" != 0 ]; do :; done
    psql -qX "$db" -c "VACUUM ANALYZE herald.messages" -c "CHECKPOINT" ;;
  bare)
    psql -qX "$db" -v ON_ERROR_STOP=1 -c "TRUNCATE public.bare" \
      -c "INSERT INTO public.bare (producer, channel, recipient, payload, run_at, max_attempts, created_at, expires_at)
          SELECT 'bench', 'email', 'u' || g || '@example.com', '{\"subject\":\"Hi\",\"text\":\"Hello\"}', now(), 5, now(), now() + interval '5 days'
          FROM generate_series(1, $preload) g" >/dev/null
    psql -qX "$db" -c "VACUUM ANALYZE public.bare" -c "CHECKPOINT" ;;
  pgmq*)
    psql -qX "$db" -v ON_ERROR_STOP=1 -c "TRUNCATE pgmq.q_bench, pgmq.a_bench" \
      -c "SELECT count(*) FROM pgmq.send_batch('bench', ARRAY(SELECT jsonb_build_object('channel', 'email',
            'recipient', 'u' || g || '@example.com', 'payload', '{\"subject\":\"Hi\",\"text\":\"Hello\"}'::jsonb)
          FROM generate_series(1, $preload) g))" >/dev/null
    psql -qX "$db" -c "VACUUM ANALYZE pgmq.q_bench" -c "VACUUM ANALYZE pgmq.a_bench" -c "CHECKPOINT" ;;
  esac
}

txns=$((preload / 1000 - 1))
for r in $(seq "$rounds"); do
  for v in $variants; do
    load "$v"
    "$bin/pgbench" -n -r -c 1 -t "$txns" -f "$scripts/$v.sql" "$db" >"$work/out" 2>&1 || { cat "$work/out" >&2; exit 1; }
    grep -q "actually processed: $txns/$txns" "$work/out" || { cat "$work/out" >&2; exit 1; }
    # pgbench -r: "  <mean latency ms>  <failures>  <statement>", one line per statement.
    read -r claim report < <(awk '$1 ~ /^[0-9.]+$/ && $2 ~ /^[0-9]+$/ && NF > 2 {printf "%s ", $1} END {print ""}' "$work/out")
    sum=$(awk -v a="$claim" -v b="$report" 'BEGIN {printf "%.2f", a + b}')
    [ "$v" = herald ] && hsum=$sum # herald runs first in every round
    echo "$sum" >>"$work/$v"
    awk -v m="$sum" -v b="$hsum" 'BEGIN {printf "%.4f\n", m / b}' >>"$work/$v.ratio"
    printf 'round %d  %-13s  claim/read %6.2f ms  report %6.2f ms  per 1,000: %6.2f ms\n' "$r" "$v" "$claim" "$report" "$sum"
  done
done

median() { sort -n "$1" | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
echo
printf '%-13s  %-20s  %s\n' variant "ms per 1,000" "herald's throughput ÷ the variant's"
for v in $variants; do
  printf '%-13s  %-20s  %.2f\n' "$v" "$(median "$work/$v")" "$(median "$work/$v.ratio")"
done
