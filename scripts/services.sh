#!/usr/bin/env bash
# Start/stop the private PostgreSQL and Redis servers the test suite and `make run` use.
#   scripts/services.sh start|stop|status  [postgres|redis|all]
# PostgreSQL: a private cluster under $CLOUDCORE_SERVICES_DIR/pg on port $PGPORT (55432),
# trust auth on loopback, run as the `postgres` system user (it refuses to run as root).
# Redis: port $REDIS_PORT (56379), no persistence.
set -euo pipefail
ACTION=${1:-status}
WHAT=${2:-all}
DIR=${CLOUDCORE_SERVICES_DIR:-/tmp/cloudcore-services}
PGPORT=${PGPORT:-55432}
REDIS_PORT=${REDIS_PORT:-56379}
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)
mkdir -p "$DIR"

as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

pg_start() {
  [ -n "$PGBIN" ] || { echo "PostgreSQL is not installed" >&2; exit 1; }
  local data="$DIR/pg"
  if [ ! -f "$data/PG_VERSION" ]; then
    mkdir -p "$data"
    [ "$(id -u)" = 0 ] && chown -R postgres:postgres "$DIR/pg"
    as_pg "$PGBIN/initdb" -D "$data" -U postgres --auth=trust -E UTF8 >/dev/null
  fi
  [ "$(id -u)" = 0 ] && chown postgres:postgres "$DIR"/pg
  if ! as_pg "$PGBIN/pg_ctl" -D "$data" status >/dev/null 2>&1; then
    as_pg "$PGBIN/pg_ctl" -D "$data" -l "$data/server.log" -w -t 60 \
      -o "-p $PGPORT -k /tmp -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300" start >/dev/null
  fi
  echo "postgres up on 127.0.0.1:$PGPORT"
}

pg_stop() {
  [ -n "$PGBIN" ] && [ -d "$DIR/pg" ] || return 0
  as_pg "$PGBIN/pg_ctl" -D "$DIR/pg" -m fast stop >/dev/null 2>&1 || true
}

redis_start() {
  command -v redis-server >/dev/null || { echo "redis-server is not installed (apt-get install redis-server)" >&2; exit 1; }
  if ! redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1; then
    # Runs as whoever calls (root included): a private server, no persistence, loopback only;
    # Debian's packaged service (port 6379, /etc/redis) is not used.
    redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no \
      --daemonize yes --pidfile "$DIR/redis.pid" --logfile "$DIR/redis.log" --dir "$DIR"
    for _ in $(seq 100); do redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
    redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 || {
      echo "redis did not start on port $REDIS_PORT; see $DIR/redis.log:" >&2
      tail -n 20 "$DIR/redis.log" >&2 || true
      exit 1
    }
  fi
  echo "redis up on 127.0.0.1:$REDIS_PORT"
}

redis_stop() {
  redis-cli -p "$REDIS_PORT" shutdown nosave >/dev/null 2>&1 || true
  for _ in $(seq 50); do redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 || break; sleep 0.1; done
}

case "$ACTION:$WHAT" in
  start:postgres) pg_start ;;
  start:redis) redis_start ;;
  start:all) pg_start; redis_start ;;
  stop:postgres) pg_stop ;;
  stop:redis) redis_stop ;;
  stop:all) pg_stop; redis_stop ;;
  status:*) as_pg "$PGBIN/pg_ctl" -D "$DIR/pg" status || true; redis-cli -p "$REDIS_PORT" ping || true ;;
  *) echo "usage: $0 start|stop|status [postgres|redis|all]" >&2; exit 2 ;;
esac
