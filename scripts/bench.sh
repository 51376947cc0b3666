#!/usr/bin/env bash
# `npm run bench`: the benchmark harness (bench/README.md explains every figure).
#   npm run bench                                   100k rows, every suite (< 15 min on 2 cores)
#   npm run bench -- --size 10k                     quick
#   npm run bench -- --size 1m --suites retrieval,lifecycle
#   npm run bench -- --quick                        fewer queries per figure
# 1. installs the npm devDependencies if needed (deno, supabase CLI)
# 2. starts/resets its OWN Postgres cluster on 127.0.0.1:${DEVAI_BENCH_PG_PORT:-54336} (never the
#    dev or test database) and applies the migrations; that cluster alone runs with
#    synchronous_commit = off (bulk loads), which the output says (DEVAI_BENCH_SYNCHRONOUS_COMMIT=on
#    measures with the durable setting the dev and test clusters use)
# 3. installs the mem0 peer under bench/peer (npm, Node) when the peer suite is selected
# 4. runs bench/main.ts: loads the corpus, runs the suites, writes bench/results/<suite>.json,
#    prints the tables and redraws bench/results/*.svg
# With BENCH_DATABASE_URL set, uses that database instead (it is reset!).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
source scripts/lib/ensure-deps.sh

export DEVAI_PG_PORT="${DEVAI_BENCH_PG_PORT:-54336}"
export DEVAI_PG_SYNCHRONOUS_COMMIT="${DEVAI_BENCH_SYNCHRONOUS_COMMIT:-off}"
if [[ -n "${BENCH_DATABASE_URL:-}" ]]; then
  export DATABASE_URL="$BENCH_DATABASE_URL" DEVAI_ALLOW_REMOTE_RESET=1
else
  unset DATABASE_URL
fi

echo "[bench] database on port $DEVAI_PG_PORT: reset + migrations" >&2
bash scripts/db.sh reset
DATABASE_URL="$(bash scripts/db.sh url)"
export DATABASE_URL

wants_peer=1
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  if [[ "${args[$i]}" == "--suites" && $((i + 1)) -lt ${#args[@]} && ",${args[$((i + 1))]}," != *",peer,"* ]]; then wants_peer=0; fi
done
if [[ $wants_peer == 1 ]]; then
  if [[ ! -d bench/peer/node_modules/mem0ai || bench/peer/package-lock.json -nt bench/peer/node_modules/.package-lock.json ]]; then
    echo "[bench] installing the mem0 peer (bench/peer, npm --legacy-peer-deps)" >&2
    (cd bench/peer && npm ci --legacy-peer-deps --no-audit --no-fund --loglevel=error >&2) \
      || (cd bench/peer && npm install --legacy-peer-deps --no-audit --no-fund --loglevel=error >&2) \
      || echo "[bench] could not install mem0ai: the peer suite will report why it skipped" >&2
  fi
fi

exec deno run -A --config supabase/functions/deno.json bench/main.ts "$@"
