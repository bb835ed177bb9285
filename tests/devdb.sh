#!/usr/bin/env bash
# devdb.sh — the project-local PostgreSQL cluster behind `make test`, `make run` and
# `make bench` when DATABASE_URL is unset.
#
#   tests/devdb.sh up      create (first time) and start the cluster, create database
#                          "herald", print its DATABASE_URL on stdout
#   tests/devdb.sh url     print the DATABASE_URL without starting anything
#   tests/devdb.sh stop    stop the cluster (data is kept)
#   tests/devdb.sh start   start a stopped cluster (same port, same data)
#   tests/devdb.sh destroy stop it and delete its folder
#
# The cluster lives in .devdb/ at the project root (git-ignored). It listens on
# 127.0.0.1 only, on the first free port from 54329 up (remembered in .devdb/port),
# with trust authentication: it is a development database, never a production one.
# initdb refuses to run as root, so as root the server runs as the `postgres` user
# (created by Debian's postgresql package, which is installed when no server binaries
# are found). Everything it prints besides the URL goes to stderr.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=${HERALD_DEVDB_DIR:-$root/.devdb}
# A link left by prepare_dir (below) points where the cluster really is.
if [ -L "$dir" ]; then dir=$(readlink -f "$dir"); fi
log() { printf 'devdb: %s\n' "$*" >&2; }

find_bin() {
  local b
  b=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  if [ -z "$b" ] && command -v pg_ctl >/dev/null 2>&1; then b=$(dirname "$(command -v pg_ctl)"); fi
  printf '%s' "$b"
}

bin=$(find_bin)
if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
  if [ "$(id -u)" -ne 0 ]; then
    log "no PostgreSQL server binaries found; install Debian's postgresql package (as root: apt-get install postgresql)"
    exit 1
  fi
  log "installing Debian's postgresql package (no server binaries found)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq postgresql >&2
  bin=$(find_bin)
fi

# as_pg runs a command as the user that owns the cluster.
as_pg() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

if [ "$(id -u)" -eq 0 ] && ! id postgres >/dev/null 2>&1; then
  log "creating system user postgres"
  useradd --system --home-dir /var/lib/postgresql --shell /bin/bash postgres
fi

prepare_dir() {
  mkdir -p "$dir"
  if [ "$(id -u)" -eq 0 ]; then
    chown postgres: "$dir"
    if ! runuser -u postgres -- test -w "$dir"; then
      # The project folder is not reachable by the postgres user (under /root, say):
      # keep the cluster in a private folder under /tmp instead, remembered by a link.
      local alt
      alt=/tmp/herald-devdb-$(printf '%s' "$root" | md5sum | cut -c1-12)
      mkdir -p "$alt" && chown postgres: "$alt" && chmod 700 "$alt"
      rmdir "$dir" 2>/dev/null || true
      ln -sfn "$alt" "$dir"
      dir=$alt
    fi
  fi
}

port_free() {
  ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

url() {
  printf 'postgres://postgres@127.0.0.1:%s/herald?sslmode=disable\n' "$(cat "$dir/port")"
}

running() {
  [ -f "$dir/data/PG_VERSION" ] && as_pg "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1
}

# start: a cluster made by this call (fresh=1) whose port another program took
# between the check and the bind (an outgoing connection's local port can be any of
# them) moves to the next free port, up to five times.
start() {
  if running; then return 0; fi
  local tries=0 port
  until as_pg "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >&2; do
    tries=$((tries + 1))
    if [ "${fresh:-0}" = 1 ] && [ "$tries" -lt 5 ] && tail -n 5 "$dir/server.log" | grep -q "Address already in use"; then
      port=$(($(cat "$dir/port") + 1))
      while ! port_free "$port"; do port=$((port + 1)); done
      log "port taken while starting; trying port $port"
      echo "port = $port" >>"$dir/data/postgresql.conf"
      echo "$port" >"$dir/port"
      continue
    fi
    log "server did not start; last lines of $dir/server.log:"
    tail -n 20 "$dir/server.log" >&2 || true
    exit 1
  done
}

init() {
  prepare_dir
  local port=54329
  while ! port_free "$port"; do port=$((port + 1)); done
  log "initdb into $dir/data (port $port)"
  as_pg "$bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null 2>&1 ||
    as_pg "$bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 --no-locale >&2
  mkdir -p "$dir/run" && { [ "$(id -u)" -ne 0 ] || chown postgres: "$dir/run"; }
  cat >>"$dir/data/postgresql.conf" <<CONF

# --- herald devdb ---
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir/run'
max_connections = 300
shared_buffers = 256MB
log_min_messages = warning
log_connections = off
CONF
  echo "$port" >"$dir/port"
  [ "$(id -u)" -ne 0 ] || chown postgres: "$dir/port"
  fresh=1
}

up() {
  if [ ! -f "$dir/data/PG_VERSION" ]; then init; fi
  if ! running; then
    local port
    port=$(cat "$dir/port")
    if ! port_free "$port"; then
      log "port $port is taken by another program; run tests/devdb.sh destroy to start over"
      exit 1
    fi
    start
  fi
  as_pg "$bin/psql" -h 127.0.0.1 -p "$(cat "$dir/port")" -U postgres -d postgres -qtAc \
    "SELECT 1 FROM pg_database WHERE datname = 'herald'" | grep -q 1 ||
    as_pg "$bin/createdb" -h 127.0.0.1 -p "$(cat "$dir/port")" -U postgres herald
  url
}

case "${1:-up}" in
  up) up ;;
  url) url ;;
  start) start ;;
  stop) if running; then as_pg "$bin/pg_ctl" -D "$dir/data" -w -m fast stop >&2; fi ;;
  destroy)
    if running; then as_pg "$bin/pg_ctl" -D "$dir/data" -w -m immediate stop >&2; fi
    target=$(readlink -f "$dir")
    rm -rf "$target" "$dir"
    ;;
  *) log "usage: tests/devdb.sh up|url|start|stop|destroy"; exit 2 ;;
esac
