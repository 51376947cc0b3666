-- A write-behind batch applies each search once. A batch whose commit's reply was lost (the
-- connection dropped after COMMIT reached the server) failed for the function, which kept its
-- searches and sent them again: each memory they used was reinforced twice and each search had two
-- events. The function now gives each search an id (write-behind.ts) and public.record_retrievals
-- writes each search's event first, under that id, and reinforces only for the searches whose event
-- is new: a batch sent again changes nothing it already changed. A search without an id (SQL
-- callers, older servers) is applied as before.
--
-- The event's id is the search's: the tenant's role may now give it (as it gives the other columns).
grant insert (id) on public.memory_events to authenticated;

-- public.record_retrievals: as in 20261128100000_memories_read_by_id_whatever_the_tenant_sizes.sql,
-- with the events written first and the searches already written left out.
CREATE OR REPLACE FUNCTION public.record_retrievals(p_items jsonb)
 RETURNS integer
 LANGUAGE plpgsql
 SET search_path TO ''
AS $function$
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
  v_items      jsonb;
begin
  if jsonb_typeof(p_items) is distinct from 'array' then
    raise exception 'record_retrievals takes a jsonb array of searches' using errcode = '22023';
  end if;
  v_decay_base := public.memory_setting('decay_base')::double precision;
  v_step := public.memory_setting('reinforce_step')::double precision;
  v_log_weight := public.memory_setting('reinforce_log_weight')::double precision;
  v_log_scale := public.memory_setting('reinforce_log_scale')::double precision;

  -- Each search's event first, under the search's id when it has one; then the searches to apply:
  -- those without an id, and those whose event is new (one already there was written by this
  -- batch's earlier try, whose commit's reply was lost).
  with written as (
    insert into public.memory_events (id, owner_id, thread_id, node, op, status, category, sim, meta, ts)
    select coalesce((i.v ->> 'id')::uuid, gen_random_uuid()), auth.uid(), i.v ->> 'thread_id', 'context',
           'search', 'ok', i.v ->> 'category', (i.v ->> 'sim')::real, coalesce(i.v -> 'meta', '{}'),
           coalesce((i.v ->> 'at')::timestamptz, now())
      from jsonb_array_elements(p_items) with ordinality as i(v, ord)
     where i.v ? 'meta' or jsonb_typeof(i.v -> 'id') = 'string'
     order by i.ord
    on conflict (id) do nothing
    returning id
  )
  select coalesce(jsonb_agg(i.v order by i.ord), '[]') into v_items
    from (select j.v, j.ord, row_number() over (partition by (j.v ->> 'id')::uuid order by j.ord) as nth
            from jsonb_array_elements(p_items) with ordinality as j(v, ord)) i
   where i.v ->> 'id' is null
      or (i.nth = 1 and (i.v ->> 'id')::uuid in (select w.id from written w)); -- a repeated id: once

  -- Each memory once, with the instants of the searches that used it in the batch's order, read
  -- and locked in one statement, each by its id (public.lock_retrieved_memories).
  for v_memory in select * from public.lock_retrieved_memories(v_items)
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

  -- One row version per memory, all in one statement (each row is locked above), each found by its
  -- id (memory_search.reinforcement_rows).
  update public.devai_memories m
     set access_count = u.access_count, last_accessed_at = u.last_accessed_at,
         strength = u.strength, base_strength = u.strength
    from memory_search.reinforcement_rows(v_ids, v_new_count, v_new_last, v_new_str) u
   where m.id = u.id;

  return v_count;
end;
$function$;
