#!/usr/bin/env bash
# `npm test`: every test, on a fresh machine or a warm one.
#   1. installs the npm devDependencies if needed (deno, supabase CLI)
#   2. provisions/reuses the local Postgres root and starts a TEST cluster on 127.0.0.1:24329
#      (DEVAI_TEST_PG_PORT; separate from `npm start`'s 54322, so tests never touch your data),
#      resets it and applies the migrations with the Supabase CLI
#   3. Supabase's security/performance advisors (must report nothing for our objects), and the
#      committed schema snapshot (supabase/schema.sql) is what the migrations make
#   4. pgTAP with pg_prove (what `supabase test db` runs, minus its Docker image)
#   5. `deno check` of every function and test; each function's index.ts with its own deno.json
#      (what deploy bundles); deno lint + deno fmt --check (DEVAI_CHECK_FORMAT=0 skips them)
#   6. the Deno suite (fake LLM) twice: on the real Postgres (the database in America/St_Johns,
#      the process in TZ=Pacific/Chatham) and on embedded PGlite (what `npm start` runs by default,
#      in UTC); tests that need a real server are reported as skipped on PGlite, with the reason in
#      their name
# tests/db_outage.test.ts also starts, crashes and restarts a throwaway cluster of its own on
# DEVAI_TEST_OUTAGE_PG_PORT (default: 22 above the test cluster's port, 24351 for the default
# 24329, so two test runs with their own DEVAI_TEST_PG_PORT never share it), and stops it.
# tests/upgrade.test.ts builds an older release's schema on a throwaway cluster of its own on
# DEVAI_TEST_UPGRADE_PG_PORT (default: 24 above the test cluster's port), upgrades it, and stops it.
# tests/read_replica.test.ts starts a streaming replica of the test cluster (scripts/db.sh
# replica-start) on DEVAI_TEST_REPLICA_PG_PORT (default: 23 above the test cluster's port), and stops it;
# tests/transaction_pooler.test.ts starts PgBouncer in front of it (scripts/db.sh pooler-start) on
# DEVAI_TEST_POOLER_PG_PORT when set, else on a free port below 32768 (tests/support/http.ts freePort), and stops it.
# The PGlite pass serves its database on DEVAI_TEST_PGLITE_DB_PORT (24347); in it,
# tests/pglite_backend.test.ts serves one on DEVAI_TEST_PGLITE_PORT (24345) and
# tests/start_embedded.test.ts runs `npm start` on DEVAI_TEST_START_PG_PORT and
# DEVAI_TEST_START_FN_PORT (24348, 24349). Every other server a test starts (the pooler aside)
# listens on port 0.
# These defaults sit below the ephemeral port range (32768-60999), where an outgoing connection can
# take a port at any moment; the run fails at once, naming the variable to set, when another
# program already listens on one of them (scripts/lib/ports.sh says why it does not move).
# Prints one summary line `summary: N passed, N failed, N skipped` and exits non-zero on any failure.
# With TEST_DATABASE_URL set, uses that database instead of the local cluster (it is reset!).
set -uo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
source scripts/lib/ensure-deps.sh
source scripts/lib/ports.sh

# The same defaults as the test files' own (tests/support/ports.ts), for when they run alone.
export DEVAI_PG_PORT="${DEVAI_TEST_PG_PORT:-24329}"
export DEVAI_TEST_OUTAGE_PG_PORT="${DEVAI_TEST_OUTAGE_PG_PORT:-$((DEVAI_PG_PORT + 22))}"
export DEVAI_TEST_REPLICA_PG_PORT="${DEVAI_TEST_REPLICA_PG_PORT:-$((DEVAI_PG_PORT + 23))}"
export DEVAI_TEST_UPGRADE_PG_PORT="${DEVAI_TEST_UPGRADE_PG_PORT:-$((DEVAI_PG_PORT + 24))}"
export DEVAI_TEST_PGLITE_DB_PORT="${DEVAI_TEST_PGLITE_DB_PORT:-24347}"
export DEVAI_TEST_PGLITE_PORT="${DEVAI_TEST_PGLITE_PORT:-24345}"
export DEVAI_TEST_START_PG_PORT="${DEVAI_TEST_START_PG_PORT:-24348}"
export DEVAI_TEST_START_FN_PORT="${DEVAI_TEST_START_FN_PORT:-24349}"
if [[ -n "${TEST_DATABASE_URL:-}" ]]; then
  export DATABASE_URL="$TEST_DATABASE_URL" DEVAI_ALLOW_REMOTE_RESET=1
else
  unset DATABASE_URL
fi

passed=0; failed=0; skipped=0
log_dir="$(mktemp -d)"
section() { printf '\n=== %s ===\n' "$*"; }
fail_hard() { echo "$*" >&2; echo "summary: $passed passed, $((failed + 1)) failed, $skipped skipped"; exit 1; }

section "ports"
# Checked before anything starts: a held port would otherwise fail one test late in the run.
ports_ok=1
if [[ -z "${TEST_DATABASE_URL:-}" ]]; then
  require_free_port DEVAI_TEST_PG_PORT "$DEVAI_PG_PORT" cluster || ports_ok=0
fi
require_free_port DEVAI_TEST_OUTAGE_PG_PORT "$DEVAI_TEST_OUTAGE_PG_PORT" cluster || ports_ok=0
require_free_port DEVAI_TEST_REPLICA_PG_PORT "$DEVAI_TEST_REPLICA_PG_PORT" replica || ports_ok=0
require_free_port DEVAI_TEST_UPGRADE_PG_PORT "$DEVAI_TEST_UPGRADE_PG_PORT" cluster || ports_ok=0
for var in DEVAI_TEST_PGLITE_DB_PORT DEVAI_TEST_PGLITE_PORT DEVAI_TEST_START_PG_PORT DEVAI_TEST_START_FN_PORT; do
  require_free_port "$var" "${!var}" || ports_ok=0
done
[[ $ports_ok == 1 ]] || fail_hard "a port this run listens on is taken (above)"
echo "ok: $DEVAI_PG_PORT $DEVAI_TEST_OUTAGE_PG_PORT $DEVAI_TEST_REPLICA_PG_PORT $DEVAI_TEST_UPGRADE_PG_PORT $DEVAI_TEST_PGLITE_DB_PORT $DEVAI_TEST_PGLITE_PORT $DEVAI_TEST_START_PG_PORT $DEVAI_TEST_START_FN_PORT"

section "database"
bash scripts/db.sh reset || fail_hard "could not provision, reset or migrate the test database"
db_url="$(bash scripts/db.sh url)"
export DATABASE_URL="$db_url"
# In UTC, as the pass below leaves it (a run stopped inside it left the database's zone moved, and
# a reset keeps it): the real-Postgres Deno pass alone runs in another zone.
reset_db_time_zone() {
  bash scripts/db.sh psql -c 'do $$ begin execute format($f$alter database %I reset timezone$f$, current_database()); end $$' >/dev/null
}
reset_db_time_zone || fail_hard "could not reset the test database's time zone"

section "supabase db advisors"
if node scripts/check-advisors.mjs "$db_url"; then passed=$((passed + 1)); else failed=$((failed + 1)); fi

section "schema snapshot (supabase/schema.sql)"
# The committed pg_dump of our schemas must be what the migrations make (docs/functions.md#schema-snapshot).
bash scripts/db.sh schema-snapshot --check
case $? in
  0) passed=$((passed + 1));;
  3) echo "skipped: no pg_dump for this server (see above)"; skipped=$((skipped + 1));;
  *) failed=$((failed + 1));;
esac

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
# :(glob) makes ** match no folder too (plain pathspecs skipped tests/*.test.ts and scripts/*.ts).
ts_globs=(':(glob)supabase/functions/**/*.ts' ':(glob)tests/**/*.ts' ':(glob)scripts/**/*.ts' ':(glob)sdk/**/*.ts' ':(glob)bench/**/*.ts' ':(glob)eval/**/*.ts' ':(glob)integrations/**/*.ts')
mapfile -t ts_files < <(git ls-files --cached --others --exclude-standard -- "${ts_globs[@]}")
if [[ ${#ts_files[@]} -gt 0 ]]; then
  if deno check --quiet --config supabase/functions/deno.json "${ts_files[@]}"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
  fi
fi

# What `supabase functions deploy` bundles: each function's index.ts with its own deno.json (its
# import map). A bare import the function's deno.json does not map fails here, not at deploy.
section "deploy check: each function with its own deno.json"
for entry in supabase/functions/*/index.ts; do
  fn_dir="$(dirname "$entry")"
  if [[ ! -f "$fn_dir/deno.json" ]]; then
    echo "$fn_dir has no deno.json: supabase functions deploy would bundle it without an import map" >&2
    failed=$((failed + 1)); continue
  fi
  if deno check --quiet --no-lock --config "$fn_dir/deno.json" "$entry"; then
    echo "ok: $entry"; passed=$((passed + 1))
  else
    echo "FAILED: $entry with $fn_dir/deno.json" >&2; failed=$((failed + 1))
  fi
done

# deno lint and deno fmt --check (configured in supabase/functions/deno.json: line width 120,
# the recommended lint rules). DEVAI_CHECK_FORMAT=0 skips both (reported as two skipped), e.g.
# on a branch that is not formatted yet.
section "deno lint and deno fmt --check"
mapfile -t js_files < <(git ls-files --cached --others --exclude-standard -- ':(glob)integrations/**/*.mjs')
if [[ "${DEVAI_CHECK_FORMAT:-1}" == "1" ]]; then
  if deno lint --quiet --config supabase/functions/deno.json "${ts_files[@]}" "${js_files[@]}"; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
  if deno fmt --check --quiet --config supabase/functions/deno.json "${ts_files[@]}" "${js_files[@]}"; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
else
  echo "skipped (DEVAI_CHECK_FORMAT=0)"; skipped=$((skipped + 2))
fi

# Runs the Deno suite on one backend; adds its counts to the totals. $1 = postgres|pglite, $2 = URL.
run_deno_suite() {
  local backend=$1 url=$2; shift 2
  local log="$log_dir/deno-$backend.log"
  DEVAI_TEST_BACKEND=$backend DATABASE_URL=$url NO_COLOR=1 \
    deno test -A --config supabase/functions/deno.json --no-check "$@" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]} line d_passed d_failed d_ignored
  line=$(grep -E '^(ok|FAILED) \| [0-9]+ passed' "$log" | tail -1)
  d_passed=$(sed -nE 's/.*\| ([0-9]+) passed.*/\1/p' <<<"$line"); d_failed=$(sed -nE 's/.*\| ([0-9]+) failed.*/\1/p' <<<"$line")
  d_ignored=$(sed -nE 's/.*\| ([0-9]+) ignored.*/\1/p' <<<"$line")
  passed=$((passed + ${d_passed:-0})); failed=$((failed + ${d_failed:-0})); skipped=$((skipped + ${d_ignored:-0}))
  if [[ $rc -ne 0 && ${d_failed:-0} -eq 0 ]]; then failed=$((failed + 1)); fi
  if [[ ${d_ignored:-0} -gt 0 ]]; then
    echo "[$backend] skipped (reason in each name):"; grep -E ' \.\.\. ignored' "$log" | sed 's/^/  /'
  fi
}

# Tests of the embedded database itself (they start their own PGlite servers) run in its pass only.
mapfile -t pglite_only < <(ls tests/pglite_backend.test.ts tests/start_embedded.test.ts 2>/dev/null)
mapfile -t all_tests < <(ls tests/*.test.ts)
mapfile -t postgres_tests < <(printf '%s\n' "${all_tests[@]}" | grep -vxF -f <(printf '%s\n' "${pglite_only[@]}"))

section "deno test: real Postgres 17 (pg_cron, pgvector 0.8)"
# Away from UTC, the database (a user may set its zone) and the server process (`npm start` runs in
# the machine's) each in another zone, half an hour off and across a clock change: nothing the
# service stores, answers or decides may depend on either (docs/operations.md#time-zones-and-locale).
# pgTAP above and the PGlite pass below run in UTC; the zone is reset after the pass.
bash scripts/db.sh psql -c 'do $$ begin execute format($f$alter database %I set timezone to %L$f$, current_database(), $z$America/St_Johns$z$); end $$' >/dev/null \
  || fail_hard "could not set the test database's time zone"
echo "database time zone America/St_Johns, server and tests TZ=Pacific/Chatham"
TZ=Pacific/Chatham run_deno_suite postgres "$db_url" "${postgres_tests[@]}"
reset_db_time_zone || fail_hard "could not reset the test database's time zone"

# The same suite on the embedded default of `npm start` (PGlite + pgvector behind our wire-protocol
# server, migrated by the Supabase CLI like the real one), in a throwaway data folder.
section "deno test: embedded PGlite"
pglite_port="$DEVAI_TEST_PGLITE_DB_PORT"
pglite_dir="$log_dir/pglite-data"
DEVAI_PGLITE_DIR="$pglite_dir" DEVAI_PG_PORT="$pglite_port" \
  deno run -A --config supabase/functions/deno.json scripts/pglite/serve-db.ts >"$log_dir/pglite.log" 2>&1 &
pglite_pid=$!
for _ in $(seq 1 180); do
  grep -q 'ready:' "$log_dir/pglite.log" && break
  kill -0 "$pglite_pid" 2>/dev/null || break
  sleep 1
done
if grep -q 'ready:' "$log_dir/pglite.log"; then
  run_deno_suite pglite "postgresql://postgres@127.0.0.1:$pglite_port/postgres" "${all_tests[@]}"
else
  cat "$log_dir/pglite.log" >&2
  echo "the embedded PGlite database did not start" >&2
  failed=$((failed + 1))
fi
kill "$pglite_pid" 2>/dev/null; wait "$pglite_pid" 2>/dev/null

rm -rf "$log_dir"
echo
echo "summary: $passed passed, $failed failed, $skipped skipped"
[[ $failed -eq 0 ]]
