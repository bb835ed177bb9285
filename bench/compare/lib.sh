# bench/compare/lib.sh — helpers of run.sh and deliver.sh, sourced by both. They read
# $server (the server's URL), $work (the run's folder), $jobs and the array pids.

# url DB: the server's URL with its database replaced by DB.
url() { sed -E "s#^([a-z]+://[^/]*)/[^?]*#\1/$1#" <<<"$server"; }
# fresh DB: an empty database DB (dropped first if it exists).
fresh() { psql -q "$server" -c "DROP DATABASE IF EXISTS $1 WITH (FORCE)" -c "CREATE DATABASE $1"; }
# drop DB: removes a finished system's database, so that autovacuum does not clean
# up its dead jobs on the CPU of the next system's run.
drop() { PGOPTIONS="-c client_min_messages=warning" psql -q "$server" -c "DROP DATABASE IF EXISTS $1 WITH (FORCE)"; }
# stop_workers: stops the processes in pids and waits for them.
stop_workers() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pids=()
}
# json_field FIGURE FIELD: FIELD ("herald", "baseline") of the row of $work/herald.json
# (the herald bench's report) whose figure starts with FIGURE.
json_field() {
  awk -v fig="\"figure\": \"$1" -v key="\"$2\": " 'index($0, fig) {on = 1} on && index($0, key) {
    v = substr($0, index($0, key) + length(key)); sub(/,$/, "", v); print v; exit}' "$work/herald.json"
}
# graphile_prepare DB: graphile-worker's packages (installed on first use), a fresh DB
# holding $jobs jobs and no ready mark; prints the DB's URL.
graphile_prepare() {
  [ -d bench/compare/graphile/node_modules/graphile-worker ] || (cd bench/compare/graphile && npm ci --silent --no-audit --no-fund) >&2
  fresh "$1"
  local db; db=$(url "$1")
  rm -f "$work/graphile-ready"
  node bench/compare/graphile/drain.mjs prepare "$db" "$jobs" >&2
  echo "$db"
}
