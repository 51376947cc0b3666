-- public.record_retrievals applied a batch in two statements per memory (a locking read, then an
-- UPDATE) and one INSERT per search. Each of those statements costs its own executor start and
-- plan lookup: on the bench's 10k corpus (`npm run bench -- --size 10k --suites handler`, with
-- pg_stat_statements.track = all) a batch took 32.7 ms for 117 memories, 0.2 ms per UPDATE, about
-- 2 ms of database time per retrieval, a fifth of what the retrieval itself costs. In SQL, 150
-- single-row updates took 35 ms where one UPDATE of the same 150 rows took 6.
--
-- Now a batch is three statements, whatever its size: one read that locks the batch's memories
-- (in id order, skipping rows another transaction holds, as before), one UPDATE of all of them
-- from arrays, one INSERT of every search event. The reinforcements are applied in memory between
-- the read and the UPDATE with the same formula and in the same order as before
-- (public.memory_reinforced_strength, one access per search that used the memory), so the
-- results are those of the searches' own reinforcements in turn, as before
-- (docs/operations.md#write-behind-reinforcement-and-search-events).

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
  -- and locked in one statement (in id order, as public.reinforce_memories locks; a row another
  -- transaction holds, such as a nightly job's, is skipped, not waited for).
  for v_memory in
    with uses as (
      select u.id, array_agg(u.at order by u.item) as ats
        from (select distinct s.item, s.at, x.id::uuid as id
                from (select i.ord as item, coalesce((i.v ->> 'at')::timestamptz, now()) as at, i.v
                        from jsonb_array_elements(p_items) with ordinality as i(v, ord)) s
               cross join lateral jsonb_array_elements_text(coalesce(s.v -> 'ids', '[]')) as x(id)) u
       group by u.id
    )
    select m.id, m.priority, m.pinned, m.strength, m.base_strength, m.access_count, m.last_accessed_at, uses.ats
      from uses
      join public.devai_memories m on m.id = uses.id
     where m.is_valid and m.state = 'active'
     order by m.id
       for update of m skip locked
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
