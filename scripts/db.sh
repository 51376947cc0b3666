#!/usr/bin/env bash
# Local Postgres 17 + pgvector + pg_cron + pgTAP for development and tests, without Docker.
#
# Debian bookworm has no pgvector, so we build a Debian trixie root with debootstrap (cached
# OUTSIDE the clone, so later starts take seconds) and run initdb/postgres inside it with chroot.
# Listens on 127.0.0.1:54322, Supabase's local database port.
#
#   scripts/db.sh start     provision the root if needed, start the server, bootstrap + migrate
#   scripts/db.sh stop      stop the server (data is kept)
#   scripts/db.sh crash     stop it at once, as a crash would (no checkpoint; the next start replays the WAL)
#   scripts/db.sh reset     drop and recreate the database, re-apply bootstrap and migrations
#   scripts/db.sh migrate   apply pending migrations with the Supabase CLI
#   scripts/db.sh url       print the connection URL
#   scripts/db.sh status    say whether the server is up
#   scripts/db.sh replica-start   start a streaming read replica of the server on DEVAI_PG_REPLICA_PORT
#                                 (default: the server's port + 1), made with pg_basebackup the first time
#   scripts/db.sh replica-stop    stop it (its data is kept; the next start catches up from the WAL)
#   scripts/db.sh replica-url     print its URL (what SUPABASE_DB_READ_URL points at)
#   scripts/db.sh pooler-start    start PgBouncer in transaction mode in front of the server, on
#                                 DEVAI_PG_POOLER_PORT (default: the server's port + 2), keeping no
#                                 prepared statements, as Supabase's transaction pooler (port 6543)
#   scripts/db.sh pooler-stop     stop it
#   scripts/db.sh pooler-url      print its URL
#
# Durability: clusters run with Postgres's defaults, fsync = on and synchronous_commit = on, so a
# commit the service acknowledged survives a crash. A cluster made by an older version of this
# script (synchronous_commit = off) is fixed at its next start. DEVAI_PG_SYNCHRONOUS_COMMIT=off
# relaxes it for one cluster (the benchmark's own, which says so in its output).
#
# DEVAI_MIGRATIONS_UNTIL=<version> (start, reset, migrate): only the migrations up to that version, the
# schema of an older release (tests/upgrade.test.ts; docs/upgrading.md).
#
# With DATABASE_URL set, no local server is started: migrate/reset/url act on that database
# (e.g. `supabase start`'s postgresql://postgres:postgres@127.0.0.1:54322/postgres or a hosted
# project). reset refuses to drop a remote database.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"

PG_ROOT="${DEVAI_PG_ROOT:-/var/cache/devai-memory/trixie-pg17}"
PG_PORT="${DEVAI_PG_PORT:-54322}"
PG_DB="${DEVAI_DB_NAME:-postgres}"
PG_DATA_IN_ROOT="/srv/devai/data-$PG_PORT"  # path inside the chroot; one cluster per port
PG_BIN_IN_ROOT="/usr/lib/postgresql/17/bin"
PG_SYNCHRONOUS_COMMIT="${DEVAI_PG_SYNCHRONOUS_COMMIT:-on}"
REPLICA_PORT="${DEVAI_PG_REPLICA_PORT:-$((PG_PORT + 1))}"
REPLICA_DATA_IN_ROOT="/srv/devai/replica-$REPLICA_PORT"  # a replica of the server on $PG_PORT
POOLER_PORT="${DEVAI_PG_POOLER_PORT:-$((PG_PORT + 2))}"
PACKAGES="postgresql-17,postgresql-17-pgvector,postgresql-17-cron,postgresql-17-pgtap,postgresql-17-plpgsql-check,pgbouncer"

say() { printf '[db] %s\n' "$*" >&2; }
die() { printf '[db] error: %s\n' "$*" >&2; exit 1; }

alternative="Alternative: point DATABASE_URL at any Supabase database (\`supabase start\` listens on postgresql://postgres:postgres@127.0.0.1:54322/postgres, or use a hosted project's connection string) and run the same command again."

local_url() { printf 'postgresql://postgres@127.0.0.1:%s/%s' "$PG_PORT" "${1:-$PG_DB}"; }
db_url() { if [[ -n "${DATABASE_URL:-}" ]]; then printf '%s' "$DATABASE_URL"; else local_url; fi; }

in_root() { # run a shell command inside the root as user postgres
  chroot "$PG_ROOT" /usr/bin/env -i PATH="$PG_BIN_IN_ROOT:/usr/bin:/bin" LANG=C.UTF-8 \
    su postgres -s /bin/bash -c "$1"
}

host_psql() {
  command -v psql >/dev/null 2>&1 || ensure_host_psql
  PGCONNECT_TIMEOUT=5 PGOPTIONS="${PGOPTIONS:-} -c client_min_messages=warning" psql -X -v ON_ERROR_STOP=1 -q "$@"
}

ensure_host_psql() {
  # The host's psql talks to the server over TCP; any major >= 12 works.
  if command -v psql >/dev/null 2>&1; then return; fi
  [[ $(id -u) -eq 0 ]] || die "psql is not installed and we are not root to install it (apt-get install postgresql-client)."
  say "installing postgresql-client (host)"
  apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-client >/dev/null
}

provision_root() {
  if [[ -x "$PG_ROOT$PG_BIN_IN_ROOT/postgres" && -f "$PG_ROOT/.devai-complete" ]]; then return; fi
  [[ $(id -u) -eq 0 ]] || die "building the local Postgres root needs root (debootstrap + chroot); you are $(id -un). $alternative"
  if ! command -v debootstrap >/dev/null 2>&1; then
    command -v apt-get >/dev/null 2>&1 || die "debootstrap is missing and there is no apt-get to install it. $alternative"
    say "installing debootstrap"
    apt-get update -qq >/dev/null || die "apt-get update failed. $alternative"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null || die "could not install debootstrap. $alternative"
  fi
  local tmp="$PG_ROOT.partial"
  rm -rf "$tmp"; mkdir -p "$(dirname "$PG_ROOT")"
  say "building Debian trixie root with Postgres 17 + pgvector + pg_cron + pgTAP in $PG_ROOT (about a minute, once)"
  if ! debootstrap --variant=minbase --include="$PACKAGES" trixie "$tmp" >"$tmp.log" 2>&1; then
    tail -n 20 "$tmp.log" >&2
    die "debootstrap failed (log: $tmp.log). $alternative"
  fi
  rm -rf "$PG_ROOT"; mv "$tmp" "$PG_ROOT"; rm -f "$tmp.log"
  touch "$PG_ROOT/.devai-complete"
}

mount_root_fs() {
  # postgres needs /proc (and /dev/shm for dynamic shared memory) inside the root.
  mountpoint -q "$PG_ROOT/proc" || mount -t proc proc "$PG_ROOT/proc"
  mountpoint -q "$PG_ROOT/dev" || mount --bind /dev "$PG_ROOT/dev"
  mkdir -p "$PG_ROOT/dev/shm"
}

init_cluster() {
  if [[ -f "$PG_ROOT$PG_DATA_IN_ROOT/PG_VERSION" ]]; then return; fi
  say "initdb"
  mkdir -p "$PG_ROOT$PG_DATA_IN_ROOT"
  chroot "$PG_ROOT" chown -R postgres:postgres /srv/devai
  in_root "initdb -D $PG_DATA_IN_ROOT -A trust -U postgres -E UTF8 --locale=C.UTF-8 >/dev/null"
  cat >>"$PG_ROOT$PG_DATA_IN_ROOT/postgresql.conf" <<CONF
# devai-memory local settings
listen_addresses = '127.0.0.1'
port = $PG_PORT
unix_socket_directories = '/tmp'
shared_preload_libraries = 'pg_cron,pg_stat_statements'
cron.database_name = 'postgres'
cron.use_background_workers = on
max_worker_processes = 32
max_connections = 200
shared_buffers = '1GB'
maintenance_work_mem = '1GB'
work_mem = '32MB'
fsync = on
synchronous_commit = $PG_SYNCHRONOUS_COMMIT
log_min_messages = warning
CONF
}

# The durability settings of an existing cluster's postgresql.conf, set to what this run asks for
# (the last occurrence of a setting wins, so each is rewritten where it stands, or appended). Prints
# "changed" when the file changed, for a running server to reload it.
ensure_durability() {
  local conf="$PG_ROOT$PG_DATA_IN_ROOT/postgresql.conf" changed=""
  [[ -f "$conf" ]] || return 0
  local name want
  for name in fsync synchronous_commit; do
    want=on; [[ $name == synchronous_commit ]] && want="$PG_SYNCHRONOUS_COMMIT"
    if grep -qE "^[[:space:]]*$name[[:space:]]*=" "$conf"; then
      if grep -E "^[[:space:]]*$name[[:space:]]*=" "$conf" | grep -qvE "^[[:space:]]*$name[[:space:]]*=[[:space:]]*'?$want'?([[:space:]]|#|$)"; then
        sed -i -E "s/^[[:space:]]*$name[[:space:]]*=.*/$name = $want/" "$conf"
        changed=1
      fi
    elif [[ $want != on ]]; then
      echo "$name = $want" >>"$conf"
      changed=1
    fi
  done
  if [[ -n "$changed" ]]; then say "postgresql.conf: fsync = on, synchronous_commit = $PG_SYNCHRONOUS_COMMIT"; echo changed; fi
}

# pg_stat_statements beside pg_cron in shared_preload_libraries (Supabase loads it too; the bench
# reads it): a cluster made before it was added gets it here. Prints "changed" when the file changed,
# for a running server to be restarted (the setting is read at start only).
ensure_preload() {
  local conf="$PG_ROOT$PG_DATA_IN_ROOT/postgresql.conf"
  [[ -f "$conf" ]] || return 0
  if grep -qE "^shared_preload_libraries = 'pg_cron'$" "$conf"; then
    sed -i -E "s/^shared_preload_libraries = 'pg_cron'$/shared_preload_libraries = 'pg_cron,pg_stat_statements'/" "$conf"
    echo changed
  fi
}

# Is the local server answering? From the host when it has psql or pg_isready (works without root),
# else from inside the root (chroot: root only).
is_up() {
  if command -v pg_isready >/dev/null 2>&1; then pg_isready -h 127.0.0.1 -p "$PG_PORT" -q >/dev/null 2>&1; return; fi
  if command -v psql >/dev/null 2>&1; then PGCONNECT_TIMEOUT=2 psql -X -q "$(local_url postgres)" -tAc 'select 1' >/dev/null 2>&1; return; fi
  [[ $(id -u) -eq 0 && -d "$PG_ROOT" ]] && in_root "pg_isready -h 127.0.0.1 -p $PG_PORT -q" >/dev/null 2>&1
}

start_server() {
  if [[ -n "${DATABASE_URL:-}" ]]; then
    say "DATABASE_URL is set: using it, no local server"
    host_psql "$DATABASE_URL" -c 'select 1' >/dev/null || die "cannot connect to DATABASE_URL"
    return
  fi
  [[ $(id -u) -eq 0 ]] || die "the local Postgres runs in a chroot, which needs root; you are $(id -un). $alternative"
  provision_root
  mount_root_fs
  init_cluster
  local durability preload
  durability=$(ensure_durability)
  preload=$(ensure_preload)
  if is_up; then
    say "already running on 127.0.0.1:$PG_PORT"
    if [[ -n "$preload" ]]; then
      say "postgresql.conf: shared_preload_libraries += pg_stat_statements; restarting"
      in_root "pg_ctl -D $PG_DATA_IN_ROOT -m fast -w -t 60 restart -l /srv/devai/postgres-$PG_PORT.log >/dev/null"
    elif [[ -n "$durability" ]]; then in_root "pg_ctl -D $PG_DATA_IN_ROOT reload >/dev/null"; fi
    return
  fi
  say "starting Postgres 17 on 127.0.0.1:$PG_PORT"
  in_root "pg_ctl -D $PG_DATA_IN_ROOT -l /srv/devai/postgres-$PG_PORT.log -w -t 60 start >/dev/null" \
    || { tail -n 30 "$PG_ROOT/srv/devai/postgres-$PG_PORT.log" >&2; die "postgres did not start"; }
}

stop_server() {
  [[ -z "${DATABASE_URL:-}" ]] || { say "DATABASE_URL is set: nothing local to stop"; return; }
  if [[ -d "$PG_ROOT$PG_DATA_IN_ROOT" ]] && is_up; then
    in_root "pg_ctl -D $PG_DATA_IN_ROOT -m fast -w stop >/dev/null"
    say "stopped"
  else
    say "not running"
  fi
}

crash_server() {
  [[ -z "${DATABASE_URL:-}" ]] || die "DATABASE_URL is set: refusing to crash a database this script did not start"
  if [[ -d "$PG_ROOT$PG_DATA_IN_ROOT" ]] && is_up; then
    in_root "pg_ctl -D $PG_DATA_IN_ROOT -m immediate -w stop >/dev/null"
    say "stopped at once (immediate shutdown: the next start recovers from the WAL)"
  else
    say "not running"
  fi
}

ensure_database() {
  [[ -z "${DATABASE_URL:-}" ]] || return 0
  local exists
  exists=$(host_psql "$(local_url postgres)" -tAc "select 1 from pg_database where datname = '$PG_DB'")
  [[ "$exists" == 1 ]] || host_psql "$(local_url postgres)" -c "create database \"$PG_DB\""
}

bootstrap() {
  # Supabase's roles and auth.* helpers, for plain Postgres only (idempotent; never a migration).
  # A Supabase database (hosted, or `supabase start`) has them already, owned by its own roles:
  # leave it alone. auth.users is GoTrue's table, which the bootstrap never creates.
  if [[ "$(host_psql "$(db_url)" -tAc "select to_regclass('auth.users') is not null")" == t ]]; then
    say "Supabase database (auth.users exists): bootstrap not needed"
    return
  fi
  host_psql "$(db_url)" -f "$repo/scripts/sql/supabase-bootstrap.sql" >/dev/null
}

# With DEVAI_MIGRATIONS_UNTIL=<version>, only the migrations up to that version are applied (the
# schema an older release had: tests/upgrade.test.ts builds one, then pushes the rest), from a
# scratch workdir holding links to them.
migrate() {
  local cli="$repo/node_modules/.bin/supabase" workdir="$repo" scratch=""
  [[ -x "$cli" ]] || die "Supabase CLI not installed: run npm ci first"
  if [[ -n "${DEVAI_MIGRATIONS_UNTIL:-}" ]]; then
    [[ "$DEVAI_MIGRATIONS_UNTIL" =~ ^[0-9]{14}$ ]] || die "DEVAI_MIGRATIONS_UNTIL=$DEVAI_MIGRATIONS_UNTIL is not a migration version (14 digits)"
    scratch="$(mktemp -d)"; workdir="$scratch"
    mkdir -p "$scratch/supabase/migrations"
    cp "$repo/supabase/config.toml" "$scratch/supabase/"
    local f
    for f in "$repo"/supabase/migrations/*.sql; do
      [[ "$(basename "$f" | cut -c1-14)" > "$DEVAI_MIGRATIONS_UNTIL" ]] || ln -s "$f" "$scratch/supabase/migrations/"
    done
    say "applying migrations up to $DEVAI_MIGRATIONS_UNTIL with the Supabase CLI"
  else
    say "applying migrations with the Supabase CLI"
  fi
  # The CLI's output goes to a log of this run's own (clusters on other ports migrate concurrently).
  local rc=0 log
  log="$(mktemp "${TMPDIR:-/tmp}/devai-db-push.XXXXXX")"
  (cd "$workdir" && "$cli" db push --remote="$(db_url)" --include-all --yes >"$log" 2>&1) || rc=$?
  [[ -z "$scratch" ]] || rm -rf "$scratch"
  [[ $rc -eq 0 ]] || cat "$log" >&2
  rm -f "$log"
  [[ $rc -eq 0 ]] || die "supabase db push failed"
}

reset() {
  if [[ -n "${DATABASE_URL:-}" ]]; then
    [[ "${DEVAI_ALLOW_REMOTE_RESET:-}" == 1 ]] || die "refusing to reset DATABASE_URL (set DEVAI_ALLOW_REMOTE_RESET=1 to drop every object in schema public and re-apply migrations)"
  fi
  start_server
  if [[ -z "${DATABASE_URL:-}" ]]; then
    say "recreating database $PG_DB"
    if [[ "$PG_DB" == postgres ]]; then
      # pg_cron lives in database postgres; drop what the migrations made instead of the database.
      host_psql "$(local_url postgres)" -f "$repo/scripts/sql/drop-project-objects.sql" >/dev/null
    else
      host_psql "$(local_url postgres)" -c "drop database if exists \"$PG_DB\" with (force)" -c "create database \"$PG_DB\"" >/dev/null
    fi
  else
    host_psql "$(db_url)" -f "$repo/scripts/sql/drop-project-objects.sql" >/dev/null
  fi
  bootstrap
  migrate
}

# up: the local Postgres answers (or DATABASE_URL is set). `npm start`'s embedded PGlite database
# listens on the same port and answers pg_isready too: it is not this server, so it is reported as such.
status() {
  if [[ -n "${DATABASE_URL:-}" ]]; then echo "up: $(db_url)"; return; fi
  if ! is_up; then echo "down"; exit 1; fi
  if command -v psql >/dev/null 2>&1 \
     && PGCONNECT_TIMEOUT=2 psql -X -q "$(local_url postgres)" -tAc 'select version()' 2>/dev/null | grep -q PGlite; then
    echo "down: port $PG_PORT is held by npm start's embedded PGlite database, not the local Postgres (stop that npm start, or set DEVAI_PG_PORT)"
    exit 1
  fi
  echo "up: $(db_url)"
}

# A streaming read replica of the local server (what Supabase's read replicas are): pg_basebackup
# -R (standby.signal + primary_conninfo) at each start; it replays the server's WAL and answers
# read-only queries. Reads through it lag the server by the replay delay.
replica_start() {
  [[ -z "${DATABASE_URL:-}" ]] || die "DATABASE_URL is set: a replica is only made of the local server"
  start_server
  local dir="$PG_ROOT$REPLICA_DATA_IN_ROOT"
  if PGCONNECT_TIMEOUT=2 host_psql "postgresql://postgres@127.0.0.1:$REPLICA_PORT/postgres" -tAc 'select 1' >/dev/null 2>&1; then
    say "replica already running on 127.0.0.1:$REPLICA_PORT"
    return
  fi
  # A stopped replica is made again rather than restarted: it streams without a replication slot
  # (a slot would keep the server's WAL for a replica that may never come back), so the WAL it
  # would resume from may be gone, and it would wait for it forever.
  if [[ -d "$dir" ]]; then
    in_root "pg_ctl -D $REPLICA_DATA_IN_ROOT -m immediate -w stop >/dev/null 2>&1 || true"
    rm -rf "$dir"
  fi
  say "pg_basebackup of 127.0.0.1:$PG_PORT into a replica on $REPLICA_PORT"
  in_root "pg_basebackup -h 127.0.0.1 -p $PG_PORT -U postgres -D $REPLICA_DATA_IN_ROOT -R -X stream -c fast >/dev/null" \
    || die "pg_basebackup failed"
  # hot_standby_feedback off: with it on, the server keeps every row version the replica's last
  # reported snapshot might see (~20 transactions behind here), so a memory reinforced twice in
  # that window cannot be pruned, its next update is not HOT and inserts into every index (the
  # HNSW graph too, about a millisecond each): 36% of the write-behind's updates at 100k, against
  # none without (docs/operations.md#read-replicas). Retrieval's reads last milliseconds; a
  # replica query that conflicts with replay only delays it (max_standby_streaming_delay, 30 s).
  cat >>"$dir/postgresql.conf" <<CONF
# devai-memory read replica of 127.0.0.1:$PG_PORT
port = $REPLICA_PORT
hot_standby = on
hot_standby_feedback = off
CONF
  say "starting the replica on 127.0.0.1:$REPLICA_PORT"
  in_root "pg_ctl -D $REPLICA_DATA_IN_ROOT -l /srv/devai/replica-$REPLICA_PORT.log -w -t 60 start >/dev/null" \
    || { tail -n 30 "$PG_ROOT/srv/devai/replica-$REPLICA_PORT.log" >&2; die "the replica did not start"; }
}

replica_stop() {
  if [[ -f "$PG_ROOT$REPLICA_DATA_IN_ROOT/PG_VERSION" ]] \
     && in_root "pg_ctl -D $REPLICA_DATA_IN_ROOT status" >/dev/null 2>&1; then
    in_root "pg_ctl -D $REPLICA_DATA_IN_ROOT -m fast -w stop >/dev/null"
    say "replica stopped"
  else
    say "replica not running"
  fi
}

# A transaction pooler in front of the server, as a deployment reaches Postgres through
# Supabase's (Supavisor, port 6543): each transaction (each statement outside one) gets whichever
# server connection is free, and no prepared statement is kept (max_prepared_statements = 0), so a
# client must send its statements unnamed (DB_PREPARE=off; docs/operations.md#prepared-statements).
pooler_answers() { # psql without host_psql's PGOPTIONS: PgBouncer refuses startup options
  command -v psql >/dev/null 2>&1 || ensure_host_psql
  PGCONNECT_TIMEOUT=2 psql -X -q -tAc 'select 1' "postgresql://postgres@127.0.0.1:$POOLER_PORT/postgres" >/dev/null 2>&1
}

pooler_start() {
  [[ -z "${DATABASE_URL:-}" ]] || die "DATABASE_URL is set: the pooler fronts the local server only"
  start_server
  if [[ ! -x "$PG_ROOT/usr/sbin/pgbouncer" ]]; then # a root built before pgbouncer was in PACKAGES
    say "installing pgbouncer into $PG_ROOT"
    chroot "$PG_ROOT" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
      sh -c 'apt-get update -qq && apt-get install -y -qq --no-install-recommends pgbouncer' >/dev/null \
      || die "could not install pgbouncer into the root"
  fi
  if pooler_answers; then
    say "pooler already running on 127.0.0.1:$POOLER_PORT"
    return
  fi
  local conf="/srv/devai/pgbouncer-$POOLER_PORT"
  printf '"postgres" ""\n' >"$PG_ROOT$conf.users"
  cat >"$PG_ROOT$conf.ini" <<CONF
; devai-memory: a transaction pooler in front of 127.0.0.1:$PG_PORT
[databases]
* = host=127.0.0.1 port=$PG_PORT
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $POOLER_PORT
unix_socket_dir =
auth_type = trust
auth_file = $conf.users
pool_mode = transaction
max_prepared_statements = 0
default_pool_size = 4
max_client_conn = 200
ignore_startup_parameters = extra_float_digits
pidfile = $conf.pid
logfile = $conf.log
CONF
  chroot "$PG_ROOT" chown postgres:postgres "$conf.ini" "$conf.users"
  say "starting pgbouncer (transaction mode) on 127.0.0.1:$POOLER_PORT in front of $PG_PORT"
  in_root "/usr/sbin/pgbouncer -d $conf.ini" || { tail -n 20 "$PG_ROOT$conf.log" >&2 2>/dev/null; die "pgbouncer did not start"; }
  for _ in $(seq 1 50); do
    pooler_answers && return
    sleep 0.1
  done
  tail -n 20 "$PG_ROOT$conf.log" >&2 2>/dev/null
  die "pgbouncer does not answer on 127.0.0.1:$POOLER_PORT"
}

pooler_stop() {
  local pidfile="$PG_ROOT/srv/devai/pgbouncer-$POOLER_PORT.pid" pid
  if [[ -f "$pidfile" ]] && pid=$(cat "$pidfile") && kill -0 "$pid" 2>/dev/null; then
    kill -INT "$pid"
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    say "pooler stopped"
  else
    say "pooler not running"
  fi
}

# The schema snapshot (supabase/schema.sql, docs/schema.md): pg_dump --schema-only of our schemas
# after all migrations, normalised (no version lines, no per-run \restrict keys, no owners), so
# what is live is one file readers can search. pg_dump must be at least the server's major: the
# host's when it is recent enough, else the local Postgres root's pg_dump 17 (as root). Without
# either it exits 3 (npm test counts the check as skipped).
SNAPSHOT_SCHEMAS=(public memory_private memory_search)
SNAPSHOT_FILE="$repo/supabase/schema.sql"

dump_schema() {
  local args="--schema-only --no-owner"
  for s in "${SNAPSHOT_SCHEMAS[@]}"; do args+=" --schema=$s"; done
  local server_major host_major
  server_major=$(host_psql "$(db_url)" -tAc "select current_setting('server_version_num')::int / 10000")
  host_major=$(pg_dump --version 2>/dev/null | sed -nE 's/.* ([0-9]+)(\.[0-9]+)?.*/\1/p' | head -1)
  if [[ -n "$host_major" && "$host_major" -ge "$server_major" ]]; then
    # shellcheck disable=SC2086
    pg_dump $args "$(db_url)"
  elif [[ $(id -u) -eq 0 && -x "$PG_ROOT$PG_BIN_IN_ROOT/pg_dump" && "$server_major" -le 17 ]]; then
    in_root "pg_dump $args '$(db_url)'"
  else
    say "no pg_dump $server_major or later: install postgresql-client-$server_major, or run this as root to use the local Postgres root's"
    return 3
  fi
}

normalise_schema() {
  printf -- '-- What every migration in supabase/migrations/ adds up to: the live definition of each table,\n'
  printf -- '-- view, function, policy and grant of schemas %s.\n' "${SNAPSHOT_SCHEMAS[*]}"
  printf -- '-- Generated by `npm run db:schema` (pg_dump --schema-only, normalised); never edit it: write a\n'
  printf -- '-- migration, then regenerate. npm test fails while it differs from what the migrations make.\n'
  sed -E -e '/^-- Dumped (from|by) /d' -e '/^\\(un)?restrict /d' | cat -s
}

schema_snapshot() {
  local out; out="$(mktemp)"
  local rc=0
  dump_schema >"$out.raw" || rc=$?
  if [[ $rc -ne 0 ]]; then rm -f "$out" "$out.raw"; [[ $rc -eq 3 ]] && exit 3; die "pg_dump failed"; fi
  normalise_schema <"$out.raw" >"$out"; rm -f "$out.raw"
  if [[ "${1:-}" == "--check" ]]; then
    if diff -u "$SNAPSHOT_FILE" "$out" >"$out.diff"; then
      rm -f "$out" "$out.diff"; say "schema snapshot is current: $SNAPSHOT_FILE"; return 0
    fi
    head -60 "$out.diff" >&2; rm -f "$out" "$out.diff"
    die "supabase/schema.sql is not what the migrations make: regenerate it with \`npm run db:reset && npm run db:schema\` and commit it"
  fi
  mv "$out" "$SNAPSHOT_FILE"; say "wrote $SNAPSHOT_FILE"
}

case "${1:-}" in
  start) start_server; ensure_database; bootstrap; migrate; say "ready: $(db_url)";;
  stop) stop_server;;
  crash) crash_server;;
  reset) reset; say "reset done: $(db_url)";;
  migrate) bootstrap; migrate;;
  url) db_url; echo;;
  status) status;;
  psql) shift; host_psql "$(db_url)" "$@";;
  replica-start) replica_start; say "replica ready: postgresql://postgres@127.0.0.1:$REPLICA_PORT/$PG_DB";;
  replica-stop) replica_stop;;
  replica-url) printf 'postgresql://postgres@127.0.0.1:%s/%s\n' "$REPLICA_PORT" "$PG_DB";;
  pooler-start) pooler_start; say "pooler ready: postgresql://postgres@127.0.0.1:$POOLER_PORT/$PG_DB";;
  pooler-stop) pooler_stop;;
  pooler-url) printf 'postgresql://postgres@127.0.0.1:%s/%s\n' "$POOLER_PORT" "$PG_DB";;
  schema-snapshot) shift; schema_snapshot "$@";;
  *) echo "usage: $0 start|stop|crash|reset|migrate|url|status|psql|schema-snapshot [--check]|replica-start|replica-stop|replica-url|pooler-start|pooler-stop|pooler-url" >&2; exit 2;;
esac
