#!/usr/bin/env bash
# Installs the npm devDependencies (deno, supabase CLI: their binaries ship inside the packages)
# when node_modules is missing or older than the lockfile. Sourced by start/test/bench.
# (sourced: leaves the caller's shell options alone)
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
if [[ ! -x "$repo/node_modules/.bin/deno" || ! -x "$repo/node_modules/.bin/supabase" \
      || "$repo/package-lock.json" -nt "$repo/node_modules/.package-lock.json" ]]; then
  # `npm install`, not `npm ci`: the lockfile records only the platform binaries the registry we
  # resolve from carries (the Supabase CLI's darwin/windows/musl packages are absent there), and
  # `npm ci` refuses a lockfile that lacks any optional dependency. `npm install` installs exactly
  # what the lockfile pins and leaves it unchanged.
  echo "[deps] npm install" >&2
  (cd "$repo" && npm install --no-audit --no-fund --loglevel=error >&2)
fi
export PATH="$repo/node_modules/.bin:$PATH"
