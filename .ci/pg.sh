#!/usr/bin/env bash
# Start / stop a throw-away PostgreSQL server for the tests: initdb + pg_ctl in a temp folder, as a non-root
# user, on a port of its own. Installs PostgreSQL from Debian's packages when no server binaries are present.
#   source .ci/pg.sh && pg_start   -> exports WAREHOUSE_TEST_PG_URL
#   pg_stop
set -euo pipefail

PG_PORT="${PG_PORT:-54329}"

pg_bindir() {
  local d
  for d in /usr/lib/postgresql/*/bin; do
    [ -x "$d/initdb" ] && { echo "$d"; return 0; }
  done
  return 1
}

pg_start() {
  local bin
  if ! bin=$(pg_bindir); then
    echo "PostgreSQL server not found: installing it (apt-get)"
    if [ "$(id -u)" = 0 ]; then
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
    else
      sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
    fi
    bin=$(pg_bindir)
  fi
  PG_DIR=$(mktemp -d /tmp/warehouse-pg.XXXXXX)
  export PG_DIR
  local as=()
  if [ "$(id -u)" = 0 ]; then
    # initdb refuses to run as root: run the server as an unprivileged user.
    id -u postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
    chown postgres "$PG_DIR"
    as=(runuser -u postgres --)
  fi
  "${as[@]}" "$bin/initdb" -D "$PG_DIR/data" -A trust -U postgres -E UTF8 --locale=C.UTF-8 >/dev/null
  "${as[@]}" "$bin/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/log" -w -t 60 \
      -o "-p $PG_PORT -k $PG_DIR -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync=off \
          -c log_min_duration_statement=15s -c session_preload_libraries=auto_explain \
          -c auto_explain.log_min_duration=15s" start >/dev/null
  export WAREHOUSE_TEST_PG_URL="postgresql+psycopg://postgres@127.0.0.1:$PG_PORT/postgres"
  PG_STOP=("${as[@]}" "$bin/pg_ctl" -D "$PG_DIR/data" -m fast -w stop)
  echo "PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$PG_PORT ($PG_DIR)"
}

pg_stop() {
  if [ -n "${PG_DIR:-}" ]; then
    "${PG_STOP[@]}" >/dev/null 2>&1 || true
    # (a statement slower than 15 s, with its plan: what a slow test spent its time on)
    if grep -q "duration: " "$PG_DIR/log" 2>/dev/null; then
      echo "PostgreSQL statements slower than 15 s (first 200 lines of the server's log):"
      grep -A30 "duration: " "$PG_DIR/log" | head -200
    fi
    rm -rf "$PG_DIR"
  fi
}
