#!/usr/bin/env bash
# Retrieval and its writes for a big tenant among many small ones (bench/README.md, "Tenant sizes").
#
#   DATABASE_URL=postgresql://postgres@127.0.0.1:24336/postgres bash bench/tenants/skewed.sh [BIG] [SMALL_TENANTS] [SMALL]
#
# Row level security hides the tenant from the planner, which plans for the average one. Where
# most tenants are small, the average is a few dozen memories, and a big tenant's reads could be
# planned as if reading all of its memories were cheap (migration 20261128100000). The corpus of
# `npm run bench` cannot show it: its tenants average 500 memories. This loads one tenant of BIG
# memories (default 20,000; content with distinct numbers and 500 topics, a chain of relations
# through them) among SMALL_TENANTS tenants of SMALL memories each (defaults 2,000 and 40), without
# embeddings (the keyword and graph signals answer), analyzes, then calls as the big tenant, each
# call in its own transaction (rolled back), RUNS times (default 12; the median of the last
# RUNS - 3 is printed):
#   retrieve_for_turn      a retrieval: keyword signal, one graph hop, usage feedback, related bullets
#   retrieve_for_turn (2)  a complex question: two graph hops, 20 memories, the delta
#   query_memories         memory.query
#   context_candidates     context assembly's candidates for 200 given ids
#   record_retrievals      a write-behind batch: 40 searches of 5 memories
#   reinforce_memories     200 memories
#   record_memory_usage    a usage report of 200 memories, 100 of them cited
# with the rows of public.devai_memories each call read (pg_stat_xact_user_tables: index fetches
# and sequential reads). By id, a call reads about as many rows as it has ids (twice for a usage
# report); a scan of the tenant shows as BIG or more. Removes the rows at the end (KEEP=1 keeps
# them). Use a scratch database: it must hold no other memories (it refuses otherwise).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
url="${DATABASE_URL:-$(bash "$here/../../scripts/db.sh" url)}"
big="${1:-20000}" small_tenants="${2:-2000}" small="${3:-40}" runs="${RUNS:-12}"
big_owner="99000000-0000-4000-8000-0000000000aa"
psql_() { psql -X -v ON_ERROR_STOP=1 -q "$url" "$@"; }

others=$(psql_ -At -c "select count(*) from public.devai_memories where owner_id::text not like '99000000-%' and owner_id::text not like '98000000-%'")
[[ "$others" == 0 ]] || { echo "[bench] $url holds $others other memories: use a scratch database" >&2; exit 1; }

echo "[bench] loading a tenant of $big memories among $small_tenants tenants of $small into $url" >&2
psql_ <<SQL
set session_replication_role = replica;
delete from public.memory_relations where owner_id::text like '99000000-%';
delete from public.devai_memories where owner_id::text like '99000000-%' or owner_id::text like '98000000-%';
insert into public.devai_memories (id, owner_id, content, memory_type, namespace, metadata)
select ('99000000-0000-4000-8000-' || lpad(g::text, 12, '0'))::uuid, '$big_owner',
       'Memory number ' || g || ' about topic t' || (g % 500) || ' of the big tenant', 'semantic',
       'devai/project/big/' || (g % 40), '{"category": "decisions"}'
  from generate_series(1, $big) g;
insert into public.devai_memories (owner_id, content, memory_type, namespace)
select ('98000000-0000-4000-8000-' || lpad((g / $small)::text, 12, '0'))::uuid,
       'A small tenant''s memory number ' || g, 'semantic', 'devai/project/small'
  from generate_series(0, $small_tenants * $small - 1) g;
insert into public.memory_relations (owner_id, from_id, to_id, relation_type, strength)
select '$big_owner', ('99000000-0000-4000-8000-' || lpad(g::text, 12, '0'))::uuid,
       ('99000000-0000-4000-8000-' || lpad((g + 1)::text, 12, '0'))::uuid, 'related_to', 0.9
  from generate_series(1, $big - 1) g;
SQL
psql_ -c "vacuum analyze public.devai_memories" -c "analyze public.memory_relations"

ids() { # SQL for an array of N of the big tenant's ids, every STEP-th
  echo "(select array_agg(('99000000-0000-4000-8000-' || lpad((g * $2)::text, 12, '0'))::uuid order by g) from generate_series(1, $1) g)"
}
declare -A calls=(
  [retrieve_for_turn]="select public.retrieve_for_turn('which number 1234 about t234', null, array['devai/project/big/', 'devai/user/'], 15, 0.45, null, graph_depth => 1)"
  [retrieve_for_turn_complex]="select public.retrieve_for_turn('which number 1234 about t234', null, array['devai/'], 20, 0.45, null, graph_depth => 2, query_complexity => 'complex', since_revision => 0)"
  [query_memories]="select count(*) from public.query_memories('which number 1234 about t234', null, array['devai/'], 'coder', array['decisions'], 15, 0.45, null, graph_depth => 1)"
  [context_candidates]="select count(*) from public.context_candidates(array['devai/'], given_ids => $(ids 200 17))"
  [record_retrievals]="select public.record_retrievals((select jsonb_agg(jsonb_build_object('at', now(), 'ids', (select jsonb_agg(('99000000-0000-4000-8000-' || lpad((s * 7 + k)::text, 12, '0'))) from generate_series(1, 5) k), 'meta', '{}'::jsonb)) from generate_series(1, 40) s))"
  [reinforce_memories]="select count(*) from public.reinforce_memories($(ids 200 11))"
  [record_memory_usage]="select recorded from public.record_memory_usage('bench', $(ids 200 13), $(ids 100 13), array_fill(10, array[200]))"
)
order=(retrieve_for_turn retrieve_for_turn_complex query_memories context_candidates record_retrievals reinforce_memories record_memory_usage)

printf '%-26s %10s %12s\n' call "p50 ms" "rows read"
for name in "${order[@]}"; do
  # Each run: its own transaction as the tenant; the server's clock around the call, and the rows
  # of public.devai_memories the transaction's scans fetched.
  out=$(for _ in $(seq 1 "$runs"); do cat <<SQL
begin;
select set_config('role', 'authenticated', true),
       set_config('request.jwt.claims', '{"sub": "$big_owner", "role": "authenticated"}', true),
       set_config('memory.via', 'service', true) \gset
select clock_timestamp() as t0, (select idx_tup_fetch + seq_tup_read from pg_stat_xact_user_tables
                                  where relid = 'public.devai_memories'::regclass) as f0 \gset
${calls[$name]} \g /dev/null
select round(extract(epoch from clock_timestamp() - :'t0'::timestamptz) * 1000, 3) || ' '
       || ((select idx_tup_fetch + seq_tup_read from pg_stat_xact_user_tables
             where relid = 'public.devai_memories'::regclass) - :f0);
rollback;
SQL
  done | psql_ -At)
  printf '%s\n' "$out" | tail -n "$((runs - 3))" | sort -n | awk -v name="$name" \
    '{ms[NR] = $1; rows = $2} END { printf "%-26s %10.2f %12d\n", name, ms[int((NR + 1) / 2)], rows }'
done

if [[ "${KEEP:-}" != 1 ]]; then
  psql_ <<SQL
set session_replication_role = replica;
delete from public.memory_relations where owner_id::text like '99000000-%';
delete from public.memory_usage where owner_id::text like '99000000-%';
delete from public.memory_usage_totals where owner_id::text like '99000000-%';
delete from public.devai_memories where owner_id::text like '99000000-%' or owner_id::text like '98000000-%';
SQL
fi
