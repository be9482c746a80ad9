#!/usr/bin/env bash
# Provision a throwaway Citus cluster (a coordinator and two workers, each a
# PostgreSQL 15 server with Citus and pgvector) for memorykit's distributed
# tests.
#
# Prints `export MEMORYKIT_CITUS_TEST_DSN=...` (the coordinator) on stdout;
# everything else goes to stderr. Each step is skipped when it is already
# done, so running it twice is cheap. When MEMORYKIT_CITUS_TEST_DSN is
# already set, nothing is touched.
#
# Citus is built from the source tarball in ../shared/vendor/citus (or
# MEMORYKIT_CITUS_SRC): only the extension and its columnar part, without
# libcurl (anonymous statistics), with make -j2. About 12 minutes on a
# loaded 2-core machine; skipped when Citus 13.2 is already installed.
#
# Usage:
#   scripts/citus-test-env.sh              build if needed, start the cluster
#   scripts/citus-test-env.sh --build-only build if needed, start nothing
#
# Environment:
#   MEMORYKIT_CITUS_TEST_DSN  use this coordinator instead (left alone)
#   MEMORYKIT_CITUS_SRC       directory holding citus-13.2.2.tar.gz and the patch
#   MEMORYKIT_CITUS_DIR       cluster directory (default /tmp/memorykit-citus)
#   MEMORYKIT_CITUS_PORT      first port to try (default 55440)
set -euo pipefail

log() { echo "citus-test-env: $*" >&2; }

if [ -n "${MEMORYKIT_CITUS_TEST_DSN:-}" ]; then
  log "MEMORYKIT_CITUS_TEST_DSN is set; using it as given"
  printf 'export MEMORYKIT_CITUS_TEST_DSN=%q\n' "$MEMORYKIT_CITUS_TEST_DSN"
  exit 0
fi

HERE=$(cd "$(dirname "$0")" && pwd)
PGVERSION=15
PGBIN=/usr/lib/postgresql/$PGVERSION/bin
CITUS_VERSION=13.2.2
SRC=${MEMORYKIT_CITUS_SRC:-$HERE/../../shared/vendor/citus}
[ -d "$SRC" ] || SRC=/work/shared/vendor/citus
DIR=${MEMORYKIT_CITUS_DIR:-/tmp/memorykit-citus}
DBNAME=memorykit_test

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo -n "$@"; fi
}

# 1. PostgreSQL and pgvector, exactly as for the single-node tests.
MEMORYKIT_PG_INSTALL_ONLY=1 "$HERE/postgres-test-env.sh"

# 2. Citus, built from source unless this version is installed.
PKGLIB=$("$PGBIN/pg_config" --pkglibdir)
SHAREDIR=$("$PGBIN/pg_config" --sharedir)
citus_installed() {
  [ -f "$PKGLIB/citus.so" ] && [ -f "$SHAREDIR/extension/citus.control" ] &&
    grep -q "Citus $CITUS_VERSION " "$PKGLIB/citus.so"
}
if ! citus_installed; then
  missing=()
  for pkg in "postgresql-server-dev-$PGVERSION" build-essential liblz4-dev libzstd-dev libkrb5-dev; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
  done
  if [ "${#missing[@]}" -gt 0 ]; then
    log "installing ${missing[*]}"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2
  fi
  BUILD=$(mktemp -d /tmp/memorykit-citus-build.XXXXXX)
  log "building Citus $CITUS_VERSION in $BUILD (about 12 minutes on 2 cores)"
  start=$(date +%s)
  (
    cd "$BUILD"
    tar -xzf "$SRC/citus-$CITUS_VERSION.tar.gz"
    cd "citus-$CITUS_VERSION"
    patch -s -p1 <"$SRC/pg15-have-createdb-privilege.patch"
    ./configure -q PG_CONFIG="$PGBIN/pg_config" --without-libcurl >&2
    # The extension and columnar only: not the logical decoders.
    make -s -j2 extension >&2
    as_root make -s install-extension >&2
  )
  rm -rf "$BUILD"
  log "built and installed Citus in $(( $(date +%s) - start )) s"
fi

if [ "${1:-}" = "--build-only" ]; then
  exit 0
fi

# 3. Three clusters owned by the postgres user.
if [ "$(id -u)" -eq 0 ]; then
  if ! id postgres >/dev/null 2>&1; then
    useradd --system --home-dir /var/lib/postgresql --shell /bin/bash postgres
  fi
  as_pg() { runuser -u postgres -- "$@"; }
else
  as_pg() { "$@"; }
fi

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

mkdir -p "$DIR"
[ "$(id -u)" -eq 0 ] && chown postgres: "$DIR"
NEXT_PORT=${MEMORYKIT_CITUS_PORT:-55440}

# start_node NAME: initdb and start the node if needed; sets PORT.
start_node() {
  local name=$1 data=$DIR/$1
  if [ ! -f "$data/PG_VERSION" ]; then
    log "initdb in $data"
    as_pg "$PGBIN/initdb" -D "$data" -U postgres -A trust --encoding=UTF8 --locale=C.UTF-8 >/dev/null
    # shard_count 4 (two per worker): the tests distribute many small schemas;
    # the default 32 shards per table would make each Distribute create hundreds
    # of tables.
    as_pg tee -a "$data/postgresql.conf" >/dev/null <<'CONF'
shared_preload_libraries = 'citus'
listen_addresses = '127.0.0.1'
max_connections = 300
fsync = off
synchronous_commit = off
full_page_writes = off
citus.shard_count = 4
CONF
  fi
  if [ -f "$DIR/$name.port" ] && as_pg "$PGBIN/pg_ctl" -D "$data" status >/dev/null 2>&1; then
    PORT=$(cat "$DIR/$name.port")
    log "reusing $name on port $PORT"
  else
    PORT=$NEXT_PORT
    while port_in_use "$PORT"; do PORT=$((PORT + 1)); done
    log "starting $name on port $PORT"
    as_pg "$PGBIN/pg_ctl" -D "$data" -l "$DIR/$name.log" -w -t 60 -o "-p $PORT -k $DIR" start >&2
    echo "$PORT" | as_pg tee "$DIR/$name.port" >/dev/null
  fi
  NEXT_PORT=$((PORT + 1))
  if ! as_pg "$PGBIN/psql" -h "$DIR" -p "$PORT" -U postgres -tAc \
    "SELECT 1 FROM pg_database WHERE datname = '$DBNAME'" postgres | grep -q 1; then
    as_pg "$PGBIN/createdb" -h "$DIR" -p "$PORT" -U postgres "$DBNAME"
  fi
  # A worker refuses DDL once it is in the cluster, even a no-op
  # IF NOT EXISTS: look first.
  local ext
  for ext in citus vector; do
    if ! as_pg "$PGBIN/psql" -h "$DIR" -p "$PORT" -U postgres -d "$DBNAME" -tAc \
      "SELECT 1 FROM pg_extension WHERE extname = '$ext'" | grep -q 1; then
      as_pg "$PGBIN/psql" -h "$DIR" -p "$PORT" -U postgres -d "$DBNAME" -qtA -v ON_ERROR_STOP=1 \
        -c "CREATE EXTENSION $ext" >/dev/null
    fi
  done
}

start_node coordinator
COORD=$PORT
start_node worker1
W1=$PORT
start_node worker2
W2=$PORT

csql() { as_pg "$PGBIN/psql" -h "$DIR" -p "$COORD" -U postgres -d "$DBNAME" -qtA -v ON_ERROR_STOP=1 "$@"; }

# 4. The coordinator knows itself and both workers (ports may have changed
# since the last run: nodes are re-registered by name and port).
if [ "$(csql -c "SELECT count(*) FROM pg_dist_node WHERE groupid = 0 AND nodeport = $COORD")" != 1 ]; then
  log "registering the coordinator"
  csql -c "SELECT citus_set_coordinator_host('127.0.0.1', $COORD)" >/dev/null
fi
for w in "$W1" "$W2"; do
  if [ "$(csql -c "SELECT count(*) FROM pg_dist_node WHERE nodeport = $w")" != 1 ]; then
    log "adding the worker on port $w"
    csql -c "SELECT citus_add_node('127.0.0.1', $w)" >/dev/null
  fi
done

printf 'export MEMORYKIT_CITUS_TEST_DSN=%q\n' \
  "postgres://postgres@127.0.0.1:$COORD/$DBNAME?sslmode=disable"
