-- public.record_retrievals applied a batch search by search: one reinforce_memories UPDATE per
-- search, so a memory used by k searches of the batch got k new row versions in one transaction.
-- None of them can be pruned before the batch commits, a page holds two versions of a memory
-- (rows are ~2.9 KB with their vector), so from the third on each version went to another page:
-- a non-HOT update, with an entry in every index of the table, the HNSW graph and the GIN
-- keyword index included. Until VACUUM, every keyword lookup read those dead versions too. After
-- the bench's handler suite at 100k: 10,498 reinforcement updates, 32% of them non-HOT; a small
-- tenant's term lookup read 145 heap pages for 5 live rows and its hybrid search took 13.7 ms
-- (3.4 after VACUUM). Now each memory of a batch is locked and read once, its reinforcements are
-- applied in order in memory with the same formula, and it is written once: 6,822 updates, 23%
-- non-HOT (batches 200 ms apart still meet unpruned pages), 37 heap pages, 7.6 ms
-- (docs/operations.md#write-behind-reinforcement-and-search-events). Same results as the
-- searches' own reinforcements in turn.

-- A memory's strength after one more access at p_at (docs/operations.md): its strength decayed
-- to p_at from its last access (never for a pinned or 'highest' memory, which keeps p_strength),
-- plus reinforce_step and reinforce_log_weight × ln(1 + accesses / reinforce_log_scale), at most
-- 1. The one reinforcement formula: public.reinforce_memories applies it once per call,
-- public.record_retrievals once per search of a batch.
create or replace function public.memory_reinforced_strength(
  p_strength double precision, p_base_strength double precision, p_access_count integer,
  p_last_accessed_at timestamptz, p_at timestamptz, p_exempt boolean,
  p_decay_base double precision, p_step double precision, p_log_weight double precision, p_log_scale double precision)
returns double precision
language plpgsql
immutable
parallel safe
set search_path = ''
as $$
begin
  return least(1.0::double precision,
    case when p_exempt then p_strength
         else public.memory_decayed_strength(p_base_strength, p_last_accessed_at, p_at, p_decay_base)
    end
    + p_step + p_log_weight * ln(1 + (p_access_count + 1) / p_log_scale));
end;
$$;
revoke all on function public.memory_reinforced_strength(double precision, double precision, integer, timestamptz, timestamptz, boolean, double precision, double precision, double precision, double precision) from public, anon;
grant execute on function public.memory_reinforced_strength(double precision, double precision, integer, timestamptz, timestamptz, boolean, double precision, double precision, double precision, double precision) to authenticated, service_role;

-- Reinforces the memories a retrieval injected (docs/retrieval.md): one access each at p_now
-- (public.memory_reinforced_strength); rows another transaction holds (a nightly job) are
-- skipped. Called by context assembly's record and by hand; the write-behind applies the same
-- formula per search (public.record_retrievals).
create or replace function public.reinforce_memories(ids uuid[], p_now timestamptz default now())
returns table (id uuid, strength double precision, access_count integer, last_accessed_at timestamptz)
language plpgsql
rows 20
set search_path = ''
as $fn$
#variable_conflict use_column
begin
  return query
  with cfg as (
    select public.memory_setting('decay_base')::double precision as decay_base,
           public.memory_setting('reinforce_step')::double precision as step,
           public.memory_setting('reinforce_log_weight')::double precision as log_weight,
           public.memory_setting('reinforce_log_scale')::double precision as log_scale
  ),
  target as (
    select m.id,
           public.memory_reinforced_strength(m.strength, m.base_strength, m.access_count, m.last_accessed_at,
                                             reinforce_memories.p_now, m.priority = 'highest' or m.pinned,
                                             cfg.decay_base, cfg.step, cfg.log_weight, cfg.log_scale) as reinforced
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
  returning m.id, m.strength, m.access_count, m.last_accessed_at;
end;
$fn$;

-- What searches wrote in their own transaction, applied later in batches by the server that
-- answered them (_shared/retrieval/write-behind.ts): the reinforcement of the memories each
-- search used, at the search's own instant and in the batch's order
-- (public.memory_reinforced_strength, as public.reinforce_memories: the strengths immediate
-- writes would have given), one row version per memory, and each search's memory_events row. As the caller (security invoker:
-- RLS limits both to the tenant's own rows). Items:
--   [{"at": timestamptz, "ids": [uuid...], "thread_id": text|null, "category": text|null,
--     "sim": number|null, "meta": {...}}, ...]
-- Returns the number of reinforcements applied (a memory used by two searches counts twice). A
-- memory a nightly job holds locked misses the batch's reinforcements (skipped, not waited for).
create or replace function public.record_retrievals(p_items jsonb)
returns integer
language plpgsql
volatile
security invoker
set search_path = ''
as $$
declare
  v_item       jsonb;
  v_count      integer := 0;
  v_decay_base double precision;
  v_step       double precision;
  v_log_weight double precision;
  v_log_scale  double precision;
  v_memory     record;
  v_row        record;
  v_at         timestamptz;
  v_strength   double precision;
  v_base       double precision;
  v_accesses   integer;
  v_last       timestamptz;
begin
  if jsonb_typeof(p_items) is distinct from 'array' then
    raise exception 'record_retrievals takes a jsonb array of searches' using errcode = '22023';
  end if;
  v_decay_base := public.memory_setting('decay_base')::double precision;
  v_step := public.memory_setting('reinforce_step')::double precision;
  v_log_weight := public.memory_setting('reinforce_log_weight')::double precision;
  v_log_scale := public.memory_setting('reinforce_log_scale')::double precision;

  -- Each memory once, with the instants of the searches that used it, in the batch's order.
  for v_memory in
    select u.id, array_agg(u.at order by u.item) as ats
      from (select distinct s.item, s.at, x.id::uuid as id
              from (select i.ord as item, coalesce((i.v ->> 'at')::timestamptz, now()) as at, i.v
                      from jsonb_array_elements(p_items) with ordinality as i(v, ord)) s
             cross join lateral jsonb_array_elements_text(coalesce(s.v -> 'ids', '[]')) as x(id)) u
     group by u.id
     order by u.id
  loop
    select m.priority, m.pinned, m.strength, m.base_strength, m.access_count, m.last_accessed_at into v_row
      from public.devai_memories m
     where m.id = v_memory.id and m.is_valid and m.state = 'active'
       for update of m skip locked;
    continue when not found;
    v_strength := v_row.strength;
    v_base := v_row.base_strength;
    v_accesses := v_row.access_count;
    v_last := v_row.last_accessed_at;
    -- One access per search that used the memory, in turn.
    foreach v_at in array v_memory.ats loop
      v_strength := public.memory_reinforced_strength(v_strength, v_base, v_accesses, v_last, v_at,
                                                      v_row.priority = 'highest' or v_row.pinned,
                                                      v_decay_base, v_step, v_log_weight, v_log_scale);
      v_base := v_strength;
      v_accesses := v_accesses + 1;
      v_last := greatest(v_last, v_at);
      v_count := v_count + 1;
    end loop;
    update public.devai_memories m
       set access_count = v_accesses, last_accessed_at = v_last, strength = v_strength, base_strength = v_base
     where m.id = v_memory.id;
  end loop;

  for v_item in select i from jsonb_array_elements(p_items) as i loop
    if v_item ? 'meta' then
      insert into public.memory_events (owner_id, thread_id, node, op, status, category, sim, meta, ts)
      values (auth.uid(), v_item ->> 'thread_id', 'context', 'search', 'ok', v_item ->> 'category',
              (v_item ->> 'sim')::real, v_item -> 'meta', coalesce((v_item ->> 'at')::timestamptz, now()));
    end if;
  end loop;
  return v_count;
end;
$$;
