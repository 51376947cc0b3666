#!/usr/bin/env bash
# `npm start`: the whole service locally. Starts (provisioning on first run) the local Postgres on
# 127.0.0.1:54322, applies migrations, and serves every edge function at
# http://127.0.0.1:54321/functions/v1/<name>. With DATABASE_URL set, uses that database instead.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
source scripts/lib/ensure-deps.sh
bash scripts/db.sh start
export DATABASE_URL="${DATABASE_URL:-$(bash scripts/db.sh url)}"
exec deno run -A --config supabase/functions/deno.json scripts/serve.ts
