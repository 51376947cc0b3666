#!/usr/bin/env bash
# Measures the nightly lifecycle jobs (decay, then TTL and purge) on N memories (default 1,000,000).
#
#   DATABASE_URL=postgresql://postgres@127.0.0.1:54322/postgres bash bench/lifecycle/decay_1m.sh [N]
#
# Loads N synthetic memories (embeddings NULL: decay never reads them) into public.devai_memories
# under owner ids from a fixed bench namespace, in the state the previous nights left them:
# last accesses spread over the past 90 days, strength = base_strength * 0.95^idle days, rows
# idle 59+ days already invalid (2% priority 'highest', 2% pinned), then times:
#   1. memory_private.run_decay(now() + 1 day)   next night: every valid decaying row changes
#                                                (~64% of rows), ~1/90 cross day 59 and are
#                                                invalidated with a DECAY history event
#   2. the same call again                        re-run: must change nothing (idempotent)
#   3. memory_private.run_decay(now() + 2 days)  the night after: all change again (the previous
#                                                night's row versions are pruned on the way)
#   4. memory_private.run_decay_step(5, now() + 3 days) called until the run is done: the step
#                                                form pg_cron runs, one night's run (each call its
#                                                own transaction): how many calls, the longest
#                                                call (what a tenant's write may wait for at most)
#                                                and all calls together, timed in the server
#   5. memory_private.run_ttl_step(5, now() + 4 days) called until the run is done: the TTL
#                                                step form pg_cron runs, on a catch-up night (the
#                                                idle (> 60 days), unimportant (importance < 3),
#                                                unpinned rows: 13.6% of the table), a TTL history
#                                                event each; timed like 4
#   6. memory_private.run_ttl(now() + 5 days)    the one-shot form on the night after (the rows
#                                                that went past 60 idle days since), then a re-run
#   7. memory_private.run_purge(now() + 36 days) called until nothing due remains (each call at
#                                                most purge_max_batches x purge_batch_size rows):
#                                                deletes what TTL soft-deleted, PURGE history rows
# and removes the bench rows at the end (KEEP=1 keeps them). The clock is fixed at load time (t0),
# so the re-run compares like with like. The load and the cleanup bypass the audit triggers
# (session_replication_role = replica); the timed runs do not. Use a scratch database.
#
# FIRST_NIGHT=1 loads the rows as `npm run bench`'s corpus has them instead (bench/corpus.ts: a
# year of ages, idle times up to 120 days skewed to recent ones, base strengths 0.3-1, 2,000
# tenants, 8% invalid, 3% soft-deleted, never decayed: rows below the threshold are still valid),
# without embeddings, and times what that corpus's first night costs:
#   1. memory_private.run_decay_step(5, t0 + 1 day) until done: the first night, step form (a
#      quarter of the rows cross the threshold at once: invalidations, DECAY history rows)
#   2. the same night's steps again: idle, nothing written
#   3. run_decay_step(5, t0 + 2 days) until done: the steady night after
# then goes on with TTL and purge as above (from t0 + 4 days).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
url="${DATABASE_URL:-$(bash "$here/../../scripts/db.sh" url)}"
n="${1:-1000000}"
bench_owner_prefix="00000000-0000-4000-8000-"
psql_() { psql -X -v ON_ERROR_STOP=1 -q "$url" "$@"; }

echo "[bench] loading $n memories into $url${FIRST_NIGHT:+ (first night: a year of idle times, as in the bench corpus)}"
if [[ "${FIRST_NIGHT:-}" == 1 ]]; then
psql_ <<SQL
set session_replication_role = replica;
delete from public.devai_memories where namespace like 'devai/bench-lifecycle/%';
insert into public.devai_memories
  (owner_id, content, memory_type, namespace, priority, source, importance, pinned,
   strength, base_strength, access_count, last_accessed_at, created_at, metadata, is_valid, state, purge_at)
select ('${bench_owner_prefix}' || lpad((g % 2000)::text, 12, '0'))::uuid,
       'Bench memory ' || g || ': the project uses tool ' || (g % 977) || ' for task ' || (g % 131)
         || ' and prefers configuration style ' || (g % 17) || ' when deploying service ' || (g % 53) || '.',
       (array['semantic','episodic','procedural'])[1 + g % 3],
       'devai/bench-lifecycle/project-' || (g % 50),
       case when r.pri < 0.05 then 'highest' when r.pri < 0.25 then 'high' when r.pri < 0.8 then 'medium' else 'low' end,
       'discovery', 1 + g % 5, r.pin < 0.02,
       case when r.pri < 0.05 or r.pin < 0.02 then r.base else r.base * power(0.95, floor(r.idle)) end,
       r.base, g % 40,
       t.epoch - make_interval(secs => r.idle * 86400),
       t.epoch - make_interval(secs => r.age * 86400), '{}'::jsonb,
       r.inv >= 0.08,
       case when r.del < 0.03 then 'soft_deleted' else 'active' end,
       case when r.del < 0.03 then t.epoch + interval '30 days' end
  from generate_series(1, $n) as g
 cross join (select now() as epoch) as t
 cross join lateral (select ((g::bigint * 2654435761) % 4294967296) / 4294967296.0 as u1,
                            ((g::bigint * 40503 + 12345) % 65536) / 65536.0 as u2,
                            ((g::bigint * 69069 + 1) % 1000003) / 1000003.0 as u3,
                            ((g::bigint * 48271) % 2147483647) / 2147483647.0 as u4) as u
 cross join lateral (select power(u.u1, 1.5) * 365 as age, u.u2 as pri, u.u3 as pin,
                            0.3 + 0.7 * u.u4 as base, u.u3 * 7 % 1 as inv, u.u4 * 11 % 1 as del) as a
 cross join lateral (select a.age, a.pri, a.pin, a.base, a.inv, a.del,
                            least(a.age, power(u.u2 * 13 % 1, 2) * 120) as idle) as r;
SQL
else
psql_ <<SQL
set session_replication_role = replica;
delete from public.devai_memories where namespace like 'devai/bench-lifecycle/%';
insert into public.devai_memories
  (owner_id, content, memory_type, namespace, priority, source, importance, pinned,
   strength, base_strength, access_count, last_accessed_at, created_at, metadata, is_valid)
select ('${bench_owner_prefix}' || lpad((g % 100)::text, 12, '0'))::uuid,
       'Bench memory ' || g || ': the project uses tool ' || (g % 977) || ' for task ' || (g % 131)
         || ' and prefers configuration style ' || (g % 17) || ' when deploying service ' || (g % 53) || '.',
       (array['semantic','episodic','procedural'])[1 + g % 3],
       'devai/bench-lifecycle/project-' || (g % 50),
       case when g % 50 = 0 then 'highest' else (array['high','medium','low'])[1 + g % 3] end,
       'discovery', 1 + g % 5, g % 50 = 1,
       case when g % 50 in (0, 1) then 0.5 + (g % 50) / 100.0
            else (0.5 + (g % 50) / 100.0) * power(0.95, floor(idle / 86400)) end,
       0.5 + (g % 50) / 100.0, g % 7,
       now() - make_interval(secs => idle),
       now() - interval '100 days', '{}'::jsonb,
       g % 50 in (0, 1) or (0.5 + (g % 50) / 100.0) * power(0.95, floor(idle / 86400)) >= 0.05
  from generate_series(1, $n) as g,
       lateral (select (g::bigint * 7919 % (90 * 86400))::double precision as idle) as i;
SQL
fi
psql_ -c "vacuum analyze public.devai_memories"
psql_ -tAc "select 'rows: ' || count(*) || ' (valid: ' || count(*) filter (where is_valid) || ')' || ', table size: ' || pg_size_pretty(pg_table_size('public.devai_memories')) || ', with indexes: ' || pg_size_pretty(pg_total_relation_size('public.devai_memories')) from public.devai_memories"

run() {
  local label="$1" at="$2" fn="${3:-run_decay}" start end
  start=$(date +%s.%N)
  result=$(psql_ -tAc "select memory_private.$fn($at)")
  end=$(date +%s.%N)
  printf '[bench] %-32s %6.1f s  %s\n' "$label" "$(echo "$end - $start" | bc)" "$result"
}
t0=$(psql_ -tAc "select max(last_accessed_at) from public.devai_memories where namespace like 'devai/bench-lifecycle/%'")
if [[ "${FIRST_NIGHT:-}" != 1 ]]; then
run "run_decay (first night)" "timestamptz '$t0' + interval '1 day'"
run "run_decay (re-run, same night)" "timestamptz '$t0' + interval '1 day'"
run "run_decay (next night)" "timestamptz '$t0' + interval '2 days'"
fi

# One night's run of a job's step form, call after call (pg_cron waits a minute between calls).
# $1 = job (decay | ttl), $2 = label, $3 = the night's clock; prints the counts summed over the calls.
steps() {
  local job="$1" label="$2" at="$3" calls=0 longest=0 total=0 line ms counts finished=false
  local -A sum=()
  # "keep": the same night again, with the finished run in place (each call answers idle).
  [[ "${4:-}" == keep ]] || psql_ -c "delete from memory_private.lifecycle_runs where job = '$job'"
  while [[ "$finished" != true ]]; do
    line=$(psql_ -tA -F ' ' -c "
      select round(extract(epoch from clock_timestamp() - statement_timestamp()) * 1000),
             r -> 'run' ->> 'finished',
             (select string_agg(key || '=' || value, ',') from jsonb_each_text(r)
               where key in ('decayed', 'invalidated', 'soft_deleted'))
        from (select memory_private.run_${job}_step(5, $at) as r offset 0) s")
    read -r ms finished counts <<<"$line"
    calls=$((calls + 1)); total=$((total + ms))
    (( ms > longest )) && longest=$ms
    local IFS=','
    for kv in $counts; do sum[${kv%%=*}]=$(( ${sum[${kv%%=*}]:-0} + ${kv#*=} )); done
    unset IFS
  done
  local out="" k
  for k in "${!sum[@]}"; do out+="\"$k\": ${sum[$k]}, "; done
  printf '[bench] %-32s %d calls, longest %.1f s, all %.1f s  {%s}\n' \
    "$label" "$calls" "$(echo "$longest / 1000" | bc -l)" "$(echo "$total / 1000" | bc -l)" "${out%, }"
}
if [[ "${FIRST_NIGHT:-}" == 1 ]]; then
  steps decay "run_decay_step (first night)" "timestamptz '$t0' + interval '1 day'"
  steps decay "run_decay_step (same night again)" "timestamptz '$t0' + interval '1 day'" keep
  steps decay "run_decay_step (the night after)" "timestamptz '$t0' + interval '2 days'"
  [[ "${DECAY_ONLY:-}" == 1 ]] && { echo "[bench] DECAY_ONLY=1: stopping after decay (rows left in place)"; exit 0; }
else
steps decay "run_decay_step (night after)" "timestamptz '$t0' + interval '3 days'"
fi
steps ttl "run_ttl_step (the night after)" "timestamptz '$t0' + interval '4 days'"
run "run_ttl (one-shot, next night)" "timestamptz '$t0' + interval '5 days'" run_ttl
run "run_ttl (re-run, same night)" "timestamptz '$t0' + interval '5 days'" run_ttl

# Purge past the grace period, call after call until nothing due is left.
purge_calls=0 purged=0 remaining=1 start=$(date +%s.%N)
while (( remaining > 0 )); do
  read -r p remaining < <(psql_ -tA -F ' ' -c "
    select r ->> 'purged', r ->> 'remaining'
      from (select memory_private.run_purge(timestamptz '$t0' + interval '36 days') as r offset 0) s")
  purge_calls=$((purge_calls + 1)); purged=$((purged + p))
  (( p == 0 )) && break
done
printf '[bench] %-32s %6.1f s  %d calls, {"purged": %d, "remaining": %d}\n' "run_purge (after the grace)" \
  "$(echo "$(date +%s.%N) - $start" | bc)" "$purge_calls" "$purged" "$remaining"
[[ "${KEEP:-}" == 1 ]] && { echo "[bench] KEEP=1: bench rows left in place"; exit 0; }

echo "[bench] removing bench rows"
psql_ <<SQL
set session_replication_role = replica;
delete from public.devai_memories where namespace like 'devai/bench-lifecycle/%';
delete from public.memory_history where owner_id::text like '${bench_owner_prefix}%';
delete from public.memory_change_log where owner_id::text like '${bench_owner_prefix}%';
delete from public.memory_thread_revisions where owner_id::text like '${bench_owner_prefix}%';
SQL
psql_ -c "vacuum public.devai_memories"
