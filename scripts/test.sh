#!/usr/bin/env bash
# `npm test`: every test, on a fresh machine or a warm one.
#   1. installs the npm devDependencies if needed (deno, supabase CLI)
#   2. provisions/reuses the local Postgres root and starts a TEST cluster on 127.0.0.1:54329
#      (separate from `npm start`'s 54322, so tests never touch your data), resets it and applies
#      the migrations with the Supabase CLI
#   3. Supabase's security/performance advisors (must report nothing for our objects)
#   4. pgTAP with pg_prove (what `supabase test db` runs, minus its Docker image)
#   5. `deno check` of every function and test, then the Deno suite (real Postgres, fake LLM)
# Prints one summary line `summary: N passed, N failed, N skipped` and exits non-zero on any failure.
# With TEST_DATABASE_URL set, uses that database instead of the local cluster (it is reset!).
set -uo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
source scripts/lib/ensure-deps.sh

export DEVAI_PG_PORT="${DEVAI_TEST_PG_PORT:-54329}"
if [[ -n "${TEST_DATABASE_URL:-}" ]]; then
  export DATABASE_URL="$TEST_DATABASE_URL" DEVAI_ALLOW_REMOTE_RESET=1
else
  unset DATABASE_URL
fi

passed=0; failed=0; skipped=0
log_dir="$(mktemp -d)"
section() { printf '\n=== %s ===\n' "$*"; }
fail_hard() { echo "$*" >&2; echo "summary: $passed passed, $((failed + 1)) failed, $skipped skipped"; exit 1; }

section "database"
bash scripts/db.sh reset || fail_hard "could not provision, reset or migrate the test database"
db_url="$(bash scripts/db.sh url)"
export DATABASE_URL="$db_url"

section "supabase db advisors"
if node scripts/check-advisors.mjs "$db_url"; then passed=$((passed + 1)); else failed=$((failed + 1)); fi

section "pgTAP"
# `supabase test db` runs pg_prove inside a Docker image, and these machines have no Docker
# engine; we run the same pg_prove (Debian's package) on the same files. Where Docker exists,
# `supabase test db --remote="$db_url" --yes` runs this very suite.
if ! command -v pg_prove >/dev/null 2>&1; then
  [[ $(id -u) -eq 0 ]] || fail_hard "pg_prove is missing: apt-get install libtap-parser-sourcehandler-pgtap-perl"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libtap-parser-sourcehandler-pgtap-perl) >/dev/null 2>&1 \
    || fail_hard "could not install pg_prove (libtap-parser-sourcehandler-pgtap-perl)"
fi
bash scripts/db.sh psql -c "create extension if not exists pgtap with schema extensions" || fail_hard "pgtap extension unavailable"
pg_prove --dbname "$db_url" --ext .sql --recurse supabase/tests/database 2>&1 | tee "$log_dir/pgtap.log"
pgtap_rc=${PIPESTATUS[0]}
# pg_prove's closing line: "Files=N, Tests=M, ..." and, on failure, "Failed X/M subtests".
pgtap_total=$(grep -oE 'Tests=[0-9]+' "$log_dir/pgtap.log" | tail -1 | cut -d= -f2)
pgtap_failed=$(grep -oE 'Failed [0-9]+/[0-9]+ subtests' "$log_dir/pgtap.log" | awk '{split($2,a,"/"); s+=a[1]} END {print s+0}')
pgtap_total=${pgtap_total:-0}
if [[ $pgtap_rc -ne 0 && $pgtap_failed -eq 0 ]]; then pgtap_failed=1; fi
if [[ $pgtap_total -eq 0 ]]; then echo "pgTAP ran no test" >&2; pgtap_failed=$((pgtap_failed + 1)); fi
passed=$((passed + pgtap_total - (pgtap_failed > pgtap_total ? pgtap_total : pgtap_failed)))
failed=$((failed + pgtap_failed))

section "deno check"
mapfile -t ts_files < <(git ls-files --cached --others --exclude-standard -- 'supabase/functions/**/*.ts' 'tests/**/*.ts' 'scripts/**/*.ts' 'sdk/**/*.ts' 'bench/**/*.ts')
if [[ ${#ts_files[@]} -gt 0 ]]; then
  if deno check --quiet --config supabase/functions/deno.json "${ts_files[@]}"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
  fi
fi

section "deno test"
if compgen -G "tests/*.test.ts" >/dev/null; then
  NO_COLOR=1 deno test -A --config supabase/functions/deno.json --no-check tests/ 2>&1 | tee "$log_dir/deno.log"
  deno_rc=${PIPESTATUS[0]}
  line=$(grep -E '^(ok|FAILED) \| [0-9]+ passed' "$log_dir/deno.log" | tail -1)
  d_passed=$(sed -nE 's/.*\| ([0-9]+) passed.*/\1/p' <<<"$line"); d_failed=$(sed -nE 's/.*\| ([0-9]+) failed.*/\1/p' <<<"$line")
  d_ignored=$(sed -nE 's/.*\| ([0-9]+) ignored.*/\1/p' <<<"$line")
  passed=$((passed + ${d_passed:-0})); failed=$((failed + ${d_failed:-0})); skipped=$((skipped + ${d_ignored:-0}))
  if [[ $deno_rc -ne 0 && ${d_failed:-0} -eq 0 ]]; then failed=$((failed + 1)); fi
fi

rm -rf "$log_dir"
echo
echo "summary: $passed passed, $failed failed, $skipped skipped"
[[ $failed -eq 0 ]]
