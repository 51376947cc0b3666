-- Plans that hold for a big tenant under row level security, made once per connection rather
-- than at every call (docs/retrieval.md#speed, bench/README.md "handler").
--
-- Measured on the bench's 100k corpus (biggest tenant 21k memories, a median one 77), the hybrid
-- search as the tenant: 45 ms p50 for the biggest tenant, 15 ms for the small one. Two causes:
--
-- 1. Row estimates. Row level security adds owner_id = (select auth.uid()) to every read of
--    devai_memories; the planner cannot know that value, so it expects the average tenant's 500
--    rows. Set-returning functions are expected to return 1,000 rows. Joining a function's few
--    ids to devai_memories then looked cheapest as a hash join over "the tenant's 500 rows": for
--    the biggest tenant, 21,429 rows and 15,455 heap pages read to keep 5 (the graph hop: 34 ms of
--    the 45). With the row counts the functions really return (a search: its match count, a hop:
--    its few dozen nodes, memory_at: one row) the same joins probe the primary key per id.
--    reinforce_memories had the same trap (id = any(ids) read the tenant's whole owner_created
--    index: 8 ms for 15 ids); it now joins its ids one by one.
--
-- 2. Planning at every call. hybrid_search, keyword_postings and match_memories ran with
--    plan_cache_mode = force_custom_plan: each of their dozen statements was planned again at
--    every call (the fusion statement alone 2-4.5 ms, each keyword term's lookup 0.13-0.33 ms).
--    With the estimates fixed, generic plans are as good (the statements' shapes do not depend on
--    the values: ids from arrays, one scope range per base, the HNSW order by the query vector)
--    and are made once per connection. Small tenant 15 -> 8 ms, biggest 45 -> 15 ms p50 (as the
--    tenant, 1 client; the A/B runs are in the commit that added this file).
--
-- ALTER FUNCTION keeps each function's body; a later `create or replace` of one of them resets
-- these settings to its own clauses, so it should carry them (rows, plan_cache_mode).

alter function public.hybrid_search set plan_cache_mode = 'force_generic_plan';
alter function public.hybrid_search rows 20;
alter function memory_search.keyword_postings set plan_cache_mode = 'force_generic_plan';
alter function public.match_memories set plan_cache_mode = 'force_generic_plan';
alter function public.match_memories rows 20;
alter function public.query_memories rows 20;
alter function public.memory_graph_neighbours rows 50;
alter function public.memory_entity_lookup rows 50;
alter function public.memory_at rows 1;

-- Access reinforcement (20261122001100; formula and semantics unchanged, docs/operations.md#access-
-- reinforcement): each id is looked up by the primary key (see 1. above), then updated as before.
-- Called by public.record_retrievals, for the searches a server writes behind their answers.
create or replace function public.reinforce_memories(ids uuid[], p_now timestamptz default now())
returns table (id uuid, strength double precision, access_count integer, last_accessed_at timestamptz)
language sql
volatile
security invoker
set search_path = ''
rows 20
as $$
  with cfg as (
    select public.memory_setting('decay_base')::double precision as decay_base,
           public.memory_setting('reinforce_step')::double precision as step,
           public.memory_setting('reinforce_log_weight')::double precision as log_weight,
           public.memory_setting('reinforce_log_scale')::double precision as log_scale
  ),
  target as (
    select m.id,
           least(1.0::double precision,
             case when m.priority = 'highest' or m.pinned then m.strength
                  else public.memory_decayed_strength(m.base_strength, m.last_accessed_at, reinforce_memories.p_now, cfg.decay_base)
             end
             + cfg.step + cfg.log_weight * ln(1 + (m.access_count + 1) / cfg.log_scale)) as reinforced
      from (select distinct u.id from unnest(reinforce_memories.ids) as u(id)) as u
      join public.devai_memories m on m.id = u.id
     cross join cfg
     where m.is_valid
       and m.state = 'active'
     order by m.id
       for update of m skip locked
  )
  update public.devai_memories m
     set access_count = m.access_count + 1,
         last_accessed_at = greatest(m.last_accessed_at, reinforce_memories.p_now),
         strength = t.reinforced,
         base_strength = t.reinforced
    from target t
   where m.id = t.id
  returning m.id, m.strength, m.access_count, m.last_accessed_at
$$;
