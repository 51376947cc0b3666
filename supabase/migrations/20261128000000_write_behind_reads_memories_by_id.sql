-- The write-behind's batch could read every memory of a big tenant to lock a few hundred.
-- public.record_retrievals joined the batch's memory ids (from jsonb) to public.devai_memories;
-- under RLS the join also carries `owner_id = (select auth.uid())`, unknown when the statement is
-- planned, so the planner counts on an average tenant (500 memories at 100k) and, taking the jsonb
-- for 10,000 ids, may plan a merge or hash join over a scan of the whole tenant. On the 100k
-- bench's database after a few runs, a batch of 200 memories of the biggest tenant (17,804 active
-- memories) read 14,327 heap pages and took 21.7 ms to lock them, 36 ms a batch in all, over a
-- millisecond of database time per retrieval; by id, the read took 2.4 ms. On a freshly loaded
-- database the planner chose lookups by id itself.
--
-- The read is now a function of its own, public.lock_retrieved_memories, that looks each memory
-- up by its id (a lateral subquery per id, which no estimate turns into a scan of the tenant) and
-- locks it there, in id order (the ids are sorted before the lookups), skipping rows another
-- transaction holds. record_retrievals and public.reinforce_memories (which had the same join: 25 ms
-- for 200 ids of that tenant, 1 ms for 10) read through it; what they compute and write is
-- unchanged.

-- The memories a write-behind batch reinforces (p_items: public.record_retrievals' searches), each
-- once, locked for update, in id order, with the instants of the searches that used it in the
-- batch's order. Valid, active memories the caller can see (RLS), each found by its id; a row
-- another transaction holds (a nightly job's) is skipped, not waited for.
create or replace function public.lock_retrieved_memories(p_items jsonb)
returns table (id uuid, priority text, pinned boolean, strength double precision, base_strength double precision,
               access_count integer, last_accessed_at timestamptz, ats timestamptz[])
language plpgsql
volatile
rows 20 -- a batch's or a search's memories: what a statement joining its rows should plan for
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
            for update of m skip locked) m;
end;
$$;
revoke all on function public.lock_retrieved_memories(jsonb) from public, anon;
grant execute on function public.lock_retrieved_memories(jsonb) to authenticated, service_role;

-- Reinforces the memories a retrieval injected (docs/retrieval.md): one access each at p_now
-- (public.memory_reinforced_strength); rows another transaction holds (a nightly job) are
-- skipped. Called by hand and by context assembly's record; the write-behind applies the same
-- formula per search (public.record_retrievals). As in 20261125100100, but for its read: the
-- write-behind's, as one search at p_now.
create or replace function public.reinforce_memories(ids uuid[], p_now timestamptz default now())
returns table (id uuid, strength double precision, access_count integer, last_accessed_at timestamptz)
language plpgsql
rows 20
set search_path = ''
as $fn$
#variable_conflict use_column
begin
  return query
  with cfg as materialized ( -- once (inlined, the settings were read again for every memory)
    select public.memory_setting('decay_base')::double precision as decay_base,
           public.memory_setting('reinforce_step')::double precision as step,
           public.memory_setting('reinforce_log_weight')::double precision as log_weight,
           public.memory_setting('reinforce_log_scale')::double precision as log_scale
  ),
  target as (
    select l.id,
           public.memory_reinforced_strength(l.strength, l.base_strength, l.access_count, l.last_accessed_at,
                                             reinforce_memories.p_now, l.priority = 'highest' or l.pinned,
                                             cfg.decay_base, cfg.step, cfg.log_weight, cfg.log_scale) as reinforced
      from public.lock_retrieved_memories(jsonb_build_array(jsonb_build_object(
             'at', reinforce_memories.p_now, 'ids', coalesce(to_jsonb(reinforce_memories.ids), '[]'::jsonb)))) l
     cross join cfg
  )
  update public.devai_memories m
     set access_count = m.access_count + 1,
         last_accessed_at = greatest(m.last_accessed_at, reinforce_memories.p_now),
         strength = t.reinforced,
         base_strength = t.reinforced
    from target t
   where m.id = t.id
  returning m.id, m.strength, m.access_count, m.last_accessed_at;
end;
$fn$;

-- The write-behind's batch (20261125760000), reading its memories through the function above.
create or replace function public.record_retrievals(p_items jsonb)
returns integer
language plpgsql
volatile
security invoker
set search_path = ''
as $$
declare
  v_count      integer := 0;
  v_decay_base double precision;
  v_step       double precision;
  v_log_weight double precision;
  v_log_scale  double precision;
  v_memory     record;
  v_at         timestamptz;
  v_strength   double precision;
  v_base       double precision;
  v_accesses   integer;
  v_last       timestamptz;
  -- what the UPDATE writes, one element per memory
  v_ids        uuid[] := '{}';
  v_new_count  integer[] := '{}';
  v_new_last   timestamptz[] := '{}';
  v_new_str    double precision[] := '{}';
begin
  if jsonb_typeof(p_items) is distinct from 'array' then
    raise exception 'record_retrievals takes a jsonb array of searches' using errcode = '22023';
  end if;
  v_decay_base := public.memory_setting('decay_base')::double precision;
  v_step := public.memory_setting('reinforce_step')::double precision;
  v_log_weight := public.memory_setting('reinforce_log_weight')::double precision;
  v_log_scale := public.memory_setting('reinforce_log_scale')::double precision;

  -- Each memory once, with the instants of the searches that used it in the batch's order, read
  -- and locked in one statement, each by its id (public.lock_retrieved_memories).
  for v_memory in select * from public.lock_retrieved_memories(p_items)
  loop
    v_strength := v_memory.strength;
    v_base := v_memory.base_strength;
    v_accesses := v_memory.access_count;
    v_last := v_memory.last_accessed_at;
    -- One access per search that used the memory, in turn.
    foreach v_at in array v_memory.ats loop
      v_strength := public.memory_reinforced_strength(v_strength, v_base, v_accesses, v_last, v_at,
                                                      v_memory.priority = 'highest' or v_memory.pinned,
                                                      v_decay_base, v_step, v_log_weight, v_log_scale);
      v_base := v_strength;
      v_accesses := v_accesses + 1;
      v_last := greatest(v_last, v_at);
      v_count := v_count + 1;
    end loop;
    v_ids := v_ids || v_memory.id;
    v_new_count := v_new_count || v_accesses;
    v_new_last := v_new_last || v_last;
    v_new_str := v_new_str || v_strength;
  end loop;

  -- One row version per memory, all in one statement (each row is locked above).
  update public.devai_memories m
     set access_count = u.access_count, last_accessed_at = u.last_accessed_at,
         strength = u.strength, base_strength = u.strength
    from unnest(v_ids, v_new_count, v_new_last, v_new_str) as u(id, access_count, last_accessed_at, strength)
   where m.id = u.id;

  insert into public.memory_events (owner_id, thread_id, node, op, status, category, sim, meta, ts)
  select auth.uid(), i.v ->> 'thread_id', 'context', 'search', 'ok', i.v ->> 'category',
         (i.v ->> 'sim')::real, i.v -> 'meta', coalesce((i.v ->> 'at')::timestamptz, now())
    from jsonb_array_elements(p_items) with ordinality as i(v, ord)
   where i.v ? 'meta'
   order by i.ord;
  return v_count;
end;
$$;
