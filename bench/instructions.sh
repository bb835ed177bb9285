#!/usr/bin/env bash
# bench/instructions.sh — instructions per statement of SQL scripts, counted by
# callgrind: the measure that moves least with a shared machine's noise, for
# comparing two forms of a function (throughput and CPU time move by ±10–15 % here;
# an instruction count by about 1 % within one run; between runs, each on its own
# scratch cluster, by up to 6 % for an enqueue and up to 40 % for a drain script
# (cause not found): compare forms within one run, interleaved).
#
# Usage: bench/instructions.sh [-n N] [-p] [-s SETUP_SQL] [-f SQL_FILE] script.sql ...
#
# Builds a scratch cluster in a temporary folder (initdb; as the postgres user when
# run as root), installs herald there with `go run ./cmd/herald migrate`, adds
# public.bare (LIKE herald.messages INCLUDING ALL, as `make bench` does) and
# public.args (one row: ch, rc, pl, the text[], text[] and jsonb[] of 100 e-mail
# messages, and js, the same batch as a JSON array), runs SQL_FILE there with psql
# when given (another form of a function to compare, or the bench/sql/instr/floors.sql
# functions), then stops it. For each script
# (one statement on one line; bench/sql/instr/ has the ones used in the README), it
# runs a single-user backend under callgrind twice — SETUP_SQL, 5 warm-up
# statements, then N and then 3N statements — and prints the difference divided by
# 2N: the instructions of one statement, start-up excluded. Every statement commits
# on its own (fsync off; no checkpoint: under valgrind a timed one fell anywhere).
# With -p the statement is prepared once (PREPARE) and each
# of the runs is an EXECUTE, as a driver's prepared statement is: its parse and
# plan, which a client pays once, are then not counted (without -p they are, which
# flatters a call of a function over a bare INSERT, whose planning costs more).
# SETUP_SQL defaults to `SET herald.notify_interval_ms = 100000`, so that the NOTIFY
# trigger's rare notification (its timing depends on valgrind's slowness) is not
# counted.
# Needs valgrind (apt-get install valgrind) and PostgreSQL's server binaries.
# Not what a user waits for: a real enqueue also pays the client round trip, the
# commit's fsync and the cache misses callgrind does not count, so check a change
# with `make bench` too.
set -euo pipefail
n=20 setup="SET herald.notify_interval_ms = 100000" prepared= file=
while getopts "n:ps:f:" opt; do
  case $opt in
  n) n=$OPTARG ;;
  p) prepared=1 ;;
  s) setup=$OPTARG ;;
  f) file=$(realpath "$OPTARG") ;;
  *) sed -n 7,8p "$0" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || { sed -n 7,8p "$0" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "valgrind is needed: apt-get install valgrind" >&2; exit 1; }
bin=$(pg_config --bindir 2>/dev/null || true)
[ -x "$bin/postgres" ] || bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/herald-instructions.XXXXXX)
trap 'rm -rf "$work"' EXIT
as=()
if [ "$(id -u)" = 0 ]; then
  chown postgres "$work"
  as=(runuser -u postgres --)
fi
port=$((20000 + RANDOM % 20000))
"${as[@]}" "$bin/initdb" -D "$work/data" -U postgres -A trust >/dev/null
"${as[@]}" "$bin/pg_ctl" -D "$work/data" -o "-p $port -k $work -c listen_addresses=127.0.0.1" -l "$work/log" -w start >/dev/null
url="postgres://postgres@127.0.0.1:$port"
psql -q "$url/postgres" -c "CREATE DATABASE herald_bench"
(cd "$root" && DATABASE_URL="$url/herald_bench" go run ./cmd/herald migrate >/dev/null)
psql -q "$url/herald_bench" <<'SQL'
CREATE TABLE public.bare (LIKE herald.messages INCLUDING ALL);
CREATE TABLE public.args AS
  SELECT array_fill('email'::text, ARRAY[100]) AS ch,
         ARRAY(SELECT 'u' || g || '@example.com' FROM generate_series(0, 99) g) AS rc,
         array_fill('{"subject":"Hi","text":"Hello"}'::jsonb, ARRAY[100]) AS pl,
         (SELECT jsonb_agg(jsonb_build_object('channel', 'email', 'recipient', 'u' || g || '@example.com',
                                              'payload', '{"subject":"Hi","text":"Hello"}'::jsonb))
          FROM generate_series(0, 99) g) AS js;
SQL
[ -z "$file" ] || psql -q -v ON_ERROR_STOP=1 "$url/herald_bench" -f "$file"
"${as[@]}" "$bin/pg_ctl" -D "$work/data" -w stop >/dev/null

# count SCRIPT STATEMENTS: callgrind's total for SETUP_SQL, the script's own setup
# (its lines after the first), warm-up and STATEMENTS runs
count() {
  { echo "$setup"; echo "TRUNCATE herald.messages, herald.log_statements, public.bare"
    tail -n +2 "$1"
    if [ -n "$prepared" ]; then
      echo "PREPARE s AS $(head -1 "$1" | sed 's/;[[:space:]]*$//');"
      for _ in $(seq $((5 + $2))); do echo "EXECUTE s;"; done
    else
      for _ in $(seq $((5 + $2))); do head -1 "$1"; done
    fi; } > "$work/in.sql"
  chmod a+r "$work/in.sql"
  "${as[@]}" valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" \
    "$bin/postgres" --single -D "$work/data" -c fsync=off -c synchronous_commit=off -c autovacuum=off -c checkpoint_timeout=1d -c max_wal_size=64GB \
    herald_bench < "$work/in.sql" > "$work/out.txt" 2> "$work/err.txt"
  if grep -h ERROR "$work/out.txt" "$work/err.txt" | head -3 | grep . >&2; then exit 1; fi
  awk '/^summary:/ {print $2}' "$work/cg.out"
}
for script in "$@"; do
  a=$(count "$script" "$n")
  b=$(count "$script" $((3 * n)))
  echo "$(basename "$script"): $(( (b - a) / (2 * n) )) instructions per ${prepared:+prepared }statement"
done
