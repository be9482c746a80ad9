#!/usr/bin/env bash
# Provision a throwaway PostgreSQL 15 + pgvector cluster for memorykit's tests.
#
# Prints `export MEMORYKIT_POSTGRES_TEST_DSN=...` on stdout; everything else goes
# to stderr. Each step is skipped when it is already done, so running it twice is
# cheap. When MEMORYKIT_POSTGRES_TEST_DSN is already set, nothing is touched.
#
# Environment:
#   MEMORYKIT_POSTGRES_TEST_DSN  use this database instead (left alone)
#   MEMORYKIT_PG_DIR             cluster directory (default /tmp/memorykit-pg)
#   MEMORYKIT_PG_PORT            first port to try (default 55432)
#   MEMORYKIT_PG_INSTALL_ONLY    set to 1: install PostgreSQL and pgvector, start
#                                nothing, print nothing (scripts/citus-test-env.sh)
set -euo pipefail

log() { echo "postgres-test-env: $*" >&2; }

if [ -n "${MEMORYKIT_POSTGRES_TEST_DSN:-}" ] && [ "${MEMORYKIT_PG_INSTALL_ONLY:-}" != 1 ]; then
  log "MEMORYKIT_POSTGRES_TEST_DSN is set; using it as given"
  printf 'export MEMORYKIT_POSTGRES_TEST_DSN=%q\n' "$MEMORYKIT_POSTGRES_TEST_DSN"
  exit 0
fi

PGVERSION=15
PGBIN=/usr/lib/postgresql/$PGVERSION/bin
PGDIR=${MEMORYKIT_PG_DIR:-/tmp/memorykit-pg}
DBNAME=memorykit_test

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo -n "$@"; fi
}

apt_updated=0
apt_update() {
  if [ "$apt_updated" -eq 0 ]; then
    log "apt-get update"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
    apt_updated=1
  fi
}

# 1. Server binaries.
if [ ! -x "$PGBIN/initdb" ]; then
  apt_update
  log "installing postgresql-$PGVERSION"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "postgresql-$PGVERSION" >&2
fi

# 2. pgvector, built from Debian's trixie source package (bookworm has no binary).
PKGLIB=$("$PGBIN/pg_config" --pkglibdir 2>/dev/null || echo "/usr/lib/postgresql/$PGVERSION/lib")
SHAREDIR=$("$PGBIN/pg_config" --sharedir 2>/dev/null || echo "/usr/share/postgresql/$PGVERSION")
if [ ! -f "$PKGLIB/vector.so" ] || [ ! -f "$SHAREDIR/extension/vector.control" ]; then
  SRCLIST=/etc/apt/sources.list.d/memorykit-trixie-src.sources
  if [ ! -f "$SRCLIST" ]; then
    log "adding a deb-src entry for trixie/main"
    as_root tee "$SRCLIST" >/dev/null <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
    apt_updated=0
  fi
  apt_update
  if [ ! -x "$PGBIN/pg_config" ] || [ ! -d "/usr/include/postgresql/$PGVERSION/server" ]; then
    log "installing postgresql-server-dev-$PGVERSION and build tools"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
      "postgresql-server-dev-$PGVERSION" build-essential dpkg-dev >&2
  fi
  BUILD=$(mktemp -d /tmp/memorykit-pgvector.XXXXXX)
  log "building pgvector from source in $BUILD"
  (
    cd "$BUILD"
    apt-get source -qq pgvector >&2
    cd "$(find . -maxdepth 1 -type d -name 'pgvector-*' | head -n 1)"
    make -s PG_CONFIG="$PGBIN/pg_config" >&2
    as_root make -s PG_CONFIG="$PGBIN/pg_config" install >&2
  )
  rm -rf "$BUILD"
fi

if [ "${MEMORYKIT_PG_INSTALL_ONLY:-}" = 1 ]; then
  exit 0
fi

# 3. A throwaway cluster owned by the postgres user.
if [ "$(id -u)" -eq 0 ]; then
  if ! id postgres >/dev/null 2>&1; then
    useradd --system --home-dir /var/lib/postgresql --shell /bin/bash postgres
  fi
  as_pg() { runuser -u postgres -- "$@"; }
else
  as_pg() { "$@"; }
fi

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

mkdir -p "$PGDIR"
[ "$(id -u)" -eq 0 ] && chown postgres: "$PGDIR"
DATA=$PGDIR/data
if [ ! -f "$DATA/PG_VERSION" ]; then
  log "initdb in $DATA"
  as_pg "$PGBIN/initdb" -D "$DATA" -U postgres -A trust --encoding=UTF8 --locale=C.UTF-8 >/dev/null
fi

if [ -f "$PGDIR/port" ] && as_pg "$PGBIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1; then
  PORT=$(cat "$PGDIR/port")
  log "reusing the running cluster on port $PORT"
else
  PORT=${MEMORYKIT_PG_PORT:-55432}
  while port_in_use "$PORT"; do PORT=$((PORT + 1)); done
  log "starting the cluster on port $PORT"
  as_pg "$PGBIN/pg_ctl" -D "$DATA" -l "$PGDIR/server.log" -w -t 60 \
    -o "-p $PORT -k $PGDIR -c listen_addresses=127.0.0.1 -c max_connections=400 -c fsync=off" start >&2
  echo "$PORT" | as_pg tee "$PGDIR/port" >/dev/null
fi

if ! as_pg "$PGBIN/psql" -h "$PGDIR" -p "$PORT" -U postgres -tAc \
  "SELECT 1 FROM pg_database WHERE datname = '$DBNAME'" postgres | grep -q 1; then
  as_pg "$PGBIN/createdb" -h "$PGDIR" -p "$PORT" -U postgres "$DBNAME"
fi

printf 'export MEMORYKIT_POSTGRES_TEST_DSN=%q\n' \
  "postgres://postgres@127.0.0.1:$PORT/$DBNAME?sslmode=disable"
