-- The retrieval's reinforcement locks its memories `for no key update`, not `for update`
-- (docs/operations.md#lock-order).
--
-- public.lock_retrieved_memories reads and locks the memories a reinforcement changes (the
-- write-behind's batch, public.record_retrievals; public.reinforce_memories; a usage report's cited
-- memories, public.record_memory_usage), and their UPDATEs change only strength, base_strength,
-- access_count and last_accessed_at, never a memory's id or owner: `for no key update`, what those
-- UPDATEs take themselves and what every write's lock takes (lockMemory, lockMemories,
-- 20261201200000). `for update` also conflicts with the key-share lock that the foreign key check
-- of a row referencing the memory takes (memory_relations, memory_entity_links, memory_usage,
-- memory_usage_sessions, context_injections, memory_contradictions, memory_proposals,
-- memory_sessions' episode and summary, a successor's superseded_by), so:
--   - such a row waited for the reinforcement's commit: an edge to a memory a batch of 200 was
--     reinforcing waited for the whole batch (tests/memory_lock_strength.test.ts, pg_blocking_pids);
--   - the reinforcement skipped (`skip locked`) a memory whose referencing row was being written:
--     a search's reinforcement of two memories while an edge between them was being inserted
--     reinforced neither (0 of 2), its accesses lost.
-- Writers, the nightly steps and a purge still exclude it (their locks conflict with `for no key
-- update` as with `for update`), and it still skips them. The body is 20261128000000's, `rows 1` as
-- set by 20261128100000; CREATE OR REPLACE keeps its grants.
create or replace function public.lock_retrieved_memories(p_items jsonb)
returns table (id uuid, priority text, pinned boolean, strength double precision, base_strength double precision,
               access_count integer, last_accessed_at timestamptz, ats timestamptz[])
language plpgsql
volatile
rows 1 -- statements joining its rows to public.devai_memories look each up by id (20261128100000)
security invoker
set search_path = ''
as $$
begin
  -- plpgsql, not sql: its plan is kept for the session (supabase/tests/database/64).
  return query
  with uses as (
    select u.id, array_agg(u.at order by u.item) as ats
      from (select distinct s.item, s.at, x.id::uuid as id
              from (select i.ord as item, coalesce((i.v ->> 'at')::timestamptz, now()) as at, i.v
                      from jsonb_array_elements(p_items) with ordinality as i(v, ord)) s
             cross join lateral jsonb_array_elements_text(coalesce(s.v -> 'ids', '[]')) as x(id)) u
     group by u.id
  )
  select m.id, m.priority, m.pinned, m.strength, m.base_strength, m.access_count, m.last_accessed_at, uses.ats
    from (select * from uses order by uses.id) uses
   cross join lateral (
         select m.id, m.priority, m.pinned, m.strength, m.base_strength, m.access_count, m.last_accessed_at
           from public.devai_memories m
          where m.id = uses.id and m.is_valid and m.state = 'active'
            for no key update of m skip locked) m;
end;
$$;
