#!/usr/bin/env bash
# `npm run bench`: the benchmark harness (bench/README.md explains every figure).
#   npm run bench                                   100k rows, every suite (< 15 min on 2 cores)
#   npm run bench -- --size 10k                     quick
#   npm run bench -- --size 1m --suites retrieval,lifecycle
#   npm run bench -- --quick                        fewer queries per figure
# 1. installs the npm devDependencies if needed (deno, supabase CLI)
# 2. starts/resets its OWN Postgres cluster on 127.0.0.1:${DEVAI_BENCH_PG_PORT:-24336} (never the
#    dev or test database) and applies the migrations; that cluster alone runs with
#    synchronous_commit = off (bulk loads), which the output says (DEVAI_BENCH_SYNCHRONOUS_COMMIT=on
#    measures with the durable setting the dev and test clusters use)
# 3. installs the mem0 peer under bench/peer (npm, Node) when the peer suite is selected
# 4. runs bench/main.ts: loads the corpus, runs the suites, writes bench/results/<suite>.json,
#    prints the tables and redraws bench/results/*.svg; the handler suite also reads through a
#    streaming replica of the cluster (scripts/db.sh replica-start on DEVAI_BENCH_REPLICA_PORT,
#    default the cluster's port + 1), started for that suite and stopped after it
# Both default ports sit below the ephemeral port range, and the run stops at once when another
# program listens on one (scripts/lib/ports.sh).
# With BENCH_DATABASE_URL set, uses that database instead (it is reset!).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
source scripts/lib/ensure-deps.sh
source scripts/lib/ports.sh

export DEVAI_PG_PORT="${DEVAI_BENCH_PG_PORT:-24336}"
# The handler suite's replica rows: a streaming replica of this cluster, started for that suite only.
export DEVAI_BENCH_REPLICA_PORT="${DEVAI_BENCH_REPLICA_PORT:-$((DEVAI_PG_PORT + 1))}"
export DEVAI_PG_SYNCHRONOUS_COMMIT="${DEVAI_BENCH_SYNCHRONOUS_COMMIT:-off}"
if [[ -n "${BENCH_DATABASE_URL:-}" ]]; then
  export DATABASE_URL="$BENCH_DATABASE_URL" DEVAI_ALLOW_REMOTE_RESET=1
  unset DEVAI_BENCH_REPLICA_PORT  # no local replica of another database (BENCH_READ_DATABASE_URL names one)
else
  unset DATABASE_URL
  require_free_port DEVAI_BENCH_PG_PORT "$DEVAI_PG_PORT" cluster || exit 1
  require_free_port DEVAI_BENCH_REPLICA_PORT "$DEVAI_BENCH_REPLICA_PORT" replica || exit 1
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
