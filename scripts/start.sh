#!/usr/bin/env bash
# `npm start`: the whole service locally, every edge function at
# http://127.0.0.1:54321/functions/v1/<name>, on one of three databases:
#   npm start                      embedded PGlite (Postgres in WASM + pgvector) in .devai/pglite,
#                                  served on 127.0.0.1:54322; needs nothing but Node and npm
#   npm run start:postgres         the local Postgres 17 + pgvector + pg_cron (scripts/db.sh: a
#                                  cached Debian trixie root, needs root and apt the first time)
#   DATABASE_URL=... npm start     any Postgres or Supabase database (`supabase start`'s 54322, or
#                                  a hosted project's connection string)
# Migrations are applied with the Supabase CLI in every case.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"

# The functions port first: found taken only once the server listens, it failed after the database
# was created and migrated (a minute on a fresh folder), with no port named.
fn_port="${FUNCTIONS_PORT:-54321}"
if [[ "$fn_port" != 0 ]] && (exec 3<>"/dev/tcp/127.0.0.1/$fn_port") 2>/dev/null; then
  echo "[start] port $fn_port (FUNCTIONS_PORT) is taken: stop the server that listens there, or give this one" \
    "its own FUNCTIONS_PORT (and, beside another npm start, its own DEVAI_PG_PORT and DEVAI_PGLITE_DIR)" >&2
  exit 1
fi

source scripts/lib/ensure-deps.sh

serve=(deno run -A --config supabase/functions/deno.json scripts/serve.ts)
if [[ -n "${DATABASE_URL:-}${SUPABASE_DB_URL:-}" ]]; then
  export DATABASE_URL="${SUPABASE_DB_URL:-$DATABASE_URL}"  # the one the functions use (env.ts: SUPABASE_DB_URL first)
  bash scripts/db.sh start   # checks the connection, bootstraps plain Postgres, applies migrations
  exec "${serve[@]}"
elif [[ "${1:-}" == "--postgres" ]]; then
  bash scripts/db.sh start
  DATABASE_URL="$(bash scripts/db.sh url)"
  export DATABASE_URL
  exec "${serve[@]}" --local-postgres   # says on exit that Postgres keeps running (npm run db:stop)
else
  exec "${serve[@]}" --embedded
fi
