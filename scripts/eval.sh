#!/usr/bin/env bash
# `npm run eval`: retrieval quality on the project's own dev set (eval/README.md explains it).
#   npm run eval                          every method, offline embedder (a few minutes on 2 cores)
#   npm run eval -- --methods vector,fts_sql
#   EMBEDDING_API_KEY=… EMBEDDING_BASE_URL=… npm run eval    with an OpenAI-compatible embedder
# 1. installs the npm devDependencies if needed (deno, supabase CLI)
# 2. starts/resets its OWN Postgres cluster on 127.0.0.1:${DEVAI_EVAL_PG_PORT:-24338} (never the
#    dev, test or bench database, nor the bench's replica on 24337) and applies the migrations; the
#    default port sits below the ephemeral port range, and the run stops at once when another
#    program listens on it (scripts/lib/ports.sh)
# 3. runs eval/run.ts: loads the dev set through the memory API, asks every question with every
#    method, prints the tables and writes eval/results/*.json
# With EVAL_DATABASE_URL set, uses that database instead (it is reset!).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
source scripts/lib/ensure-deps.sh
source scripts/lib/ports.sh

export DEVAI_PG_PORT="${DEVAI_EVAL_PG_PORT:-24338}"
if [[ -n "${EVAL_DATABASE_URL:-}" ]]; then
  export DATABASE_URL="$EVAL_DATABASE_URL" DEVAI_ALLOW_REMOTE_RESET=1
else
  unset DATABASE_URL
  require_free_port DEVAI_EVAL_PG_PORT "$DEVAI_PG_PORT" cluster || exit 1
fi
unset SUPABASE_DB_URL

echo "[eval] database on port $DEVAI_PG_PORT: reset + migrations" >&2
bash scripts/db.sh reset
DATABASE_URL="$(bash scripts/db.sh url)"
export DATABASE_URL

exec deno run -A --config supabase/functions/deno.json eval/run.ts "$@"
