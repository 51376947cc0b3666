#!/usr/bin/env bash
# The SDK (sdk/) as the npm package devai-memory-sdk, from this repository:
#   bash scripts/sdk.sh pack      build, then sdk/devai-memory-sdk-<version>.tgz: `npm install` that file anywhere
#   bash scripts/sdk.sh example   build, then `node sdk/example.mjs` against `npm start` (Node 20.3+: the SDK combines signals with AbortSignal.any)
# Installs the SDK's one devDependency (its pinned TypeScript) the first time.
set -euo pipefail
cd "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/sdk"
if [[ ! -x node_modules/.bin/tsc || package-lock.json -nt node_modules/.package-lock.json ]]; then
  npm ci --no-audit --no-fund --loglevel=error >&2
fi
case "${1:-}" in
  pack) npm pack --loglevel=error;;     # its prepack script builds dist/
  example) npm run --silent build && exec node example.mjs;;
  *) echo "usage: $0 pack|example" >&2; exit 2;;
esac
