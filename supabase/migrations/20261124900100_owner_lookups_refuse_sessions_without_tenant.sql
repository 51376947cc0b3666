-- The security-definer lookups that take an owner (memory_search.keyword_postings,
-- memory_search.context_lookups) pinned the tenant only when auth.uid() was set: a session as
-- authenticated whose claims had no sub (auth.uid() null) could read any tenant's ids, file paths
-- and branch names through them. They now ask memory_search.caller_reads_owner: a tenant only
-- its own rows, and a session with no tenant only as one of the jobs' roles (service_role, or
-- postgres for cron and the worker's privileged connection). Bodies otherwise unchanged
-- (keyword_postings keeps plan_cache_mode = 'force_generic_plan' from 20261124800200).

-- Whether the caller may read tenant p_owner's rows through a security-definer lookup: with a
-- tenant (auth.uid()), only its own; without one, only a job's role. The role checked is the
-- session's (the `role` setting, which a security-definer function does not change), so
-- authenticated and anon without a sub find nothing. Called by the two lookups above.
create or replace function memory_search.caller_reads_owner(p_owner uuid)
returns boolean
language sql
stable
set search_path = ''
as $$
  select p_owner is not null
     and case when auth.uid() is not null then auth.uid() = p_owner
              else coalesce(nullif(current_setting('role', true), ''), 'none') in ('none', 'postgres', 'service_role') end
$$;
-- Only the lookups call it, as their owner: no role is granted it.
revoke all on function memory_search.caller_reads_owner(uuid) from public, anon, authenticated, service_role;

-- Document frequencies and candidate ids of keyword search (20261124400000_hybrid_search.sql,
-- docs/retrieval.md#keyword); the owner check is memory_search.caller_reads_owner.
create or replace function memory_search.keyword_postings(
  p_owner uuid, p_scopes text[], p_terms tsquery[], p_df_cap integer, p_max_candidates integer,
  p_as_of timestamptz default null,
  out term_df integer[], out candidates uuid[])
language plpgsql
stable
security definer
set search_path = ''
set plan_cache_mode = 'force_generic_plan'
as $$
declare
  v_keys   text[];
  v_scoped boolean;
  v_ids    uuid[];
  v_rare   text[] := '{}';
  v_q      tsquery;
  v_sq     tsquery;
  v_order  integer[];
  v_live   tsquery[];
begin
  term_df := '{}';
  candidates := '{}';
  if not memory_search.caller_reads_owner(p_owner) then
    return;
  end if;
  -- Whole scopes (or deeper ones) are looked up by their keys in fts_scoped; an as-of search, or
  -- a scope above them ('devai/project'), scans the tenant's rows instead.
  v_scoped := p_as_of is null and not exists (
    select 1 from unnest(p_scopes) s
     where split_part(rtrim(s, '/'), '/', 2) = ''
        or (split_part(rtrim(s, '/'), '/', 2) = 'project' and split_part(rtrim(s, '/'), '/', 3) = ''));
  select array_agg(distinct memory_private.keyword_scope_key(p_owner, memory_private.keyword_scope(rtrim(s, '/'))))
    into v_keys from unnest(p_scopes) s;

  foreach v_q in array coalesce(p_terms, '{}') loop
    if v_scoped then
      v_sq := memory_search.scoped_query(v_q, v_keys);
      select array_agg(x.id) into v_ids
        from (select m.id from public.devai_memories m
               where m.fts_scoped @@ v_sq
                 and m.is_valid and m.state = 'active' and m.source is distinct from 'conversation'
                 -- The key pins the tenant already; this re-check (against a key collision) is
                 -- written so the planner cannot add the tenant's whole owner index to the lookup.
                 and m.owner_id::text = p_owner::text
                 and (m.namespace || '/') ^@ any (p_scopes)
                 and m.fts @@ v_q
               limit p_df_cap + 1) x;
    else
      select array_agg(x.id) into v_ids
        from (select m.id from public.devai_memories m
               where m.owner_id = p_owner
                 and (case when p_as_of is null then m.is_valid and m.state = 'active'
                           else m.created_at <= p_as_of and (m.valid_until is null or m.valid_until > p_as_of)
                                and (select a.held from public.memory_at(m, p_as_of) a) end)
                 and m.source is distinct from 'conversation'
                 and m.fts @@ v_q
                 and (m.namespace || '/') ^@ any (p_scopes)
               limit p_df_cap + 1) x;
    end if;
    term_df := term_df || coalesce(cardinality(v_ids), 0);
    v_rare := v_rare || case when coalesce(cardinality(v_ids), 0) between 1 and p_df_cap then array_to_string(v_ids, ' ') else '' end;
  end loop;

  -- Rarest terms first bring their matches in.
  select coalesce(array_agg(o.i order by term_df[o.i], o.i), '{}') into v_order
    from generate_subscripts(term_df, 1) o(i)
   where term_df[o.i] between 1 and p_df_cap;
  for i in 1 .. cardinality(v_order) loop
    exit when cardinality(candidates) >= p_max_candidates;
    candidates := candidates || string_to_array(v_rare[v_order[i]], ' ')::uuid[];
  end loop;
  if cardinality(v_order) > 0 then
    return;
  end if;

  -- Every term that matches is common: the memories matching all of them, else any of them.
  select coalesce(array_agg(q order by i), '{}') into v_live
    from unnest(p_terms) with ordinality t(q, i) where term_df[t.i] > 0;
  if cardinality(v_live) = 0 then
    return;
  end if;
  for pass in 1 .. 2 loop
    exit when cardinality(candidates) >= p_df_cap;
    v_q := (select string_agg('(' || q::text || ')', case when pass = 1 then ' & ' else ' | ' end)::tsquery from unnest(v_live) q);
    if v_scoped then
      v_sq := memory_search.scoped_query(v_q, v_keys);
      select candidates || coalesce(array_agg(x.id), '{}') into candidates
        from (select m.id from public.devai_memories m
               where m.fts_scoped @@ v_sq
                 and m.is_valid and m.state = 'active' and m.source is distinct from 'conversation'
                 and m.owner_id::text = p_owner::text
                 and (m.namespace || '/') ^@ any (p_scopes)
                 and m.fts @@ v_q
                 and not (m.id = any (candidates))
               limit p_df_cap) x;
    else
      select candidates || coalesce(array_agg(x.id), '{}') into candidates
        from (select m.id from public.devai_memories m
               where m.owner_id = p_owner
                 and (case when p_as_of is null then m.is_valid and m.state = 'active'
                           else m.created_at <= p_as_of and (select a.held from public.memory_at(m, p_as_of) a) end)
                 and m.source is distinct from 'conversation'
                 and m.fts @@ v_q
                 and (m.namespace || '/') ^@ any (p_scopes)
                 and not (m.id = any (candidates))
               limit p_df_cap) x;
    end if;
  end loop;
end;
$$;
grant execute on function memory_search.keyword_postings(uuid, text[], tsquery[], integer, integer, timestamptz) to authenticated, service_role;

-- The lookups of context assembly (20261124600100_context_functions.sql, docs/context.md); the
-- owner check is memory_search.caller_reads_owner.
create or replace function memory_search.context_lookups(
  p_owner uuid, p_scopes text[], p_files text[], p_modules text[], p_branch text, p_categories text[],
  p_recent_since timestamptz, p_max_per_kind integer,
  out ids uuid[], out kinds text[], out details text[], out weights double precision[])
language plpgsql
stable
security definer
set search_path = ''
set plan_cache_mode = 'force_custom_plan'
as $$
declare
  v_dir text;
  v_key text;
  v_ids uuid[];
  v_det text[];
  v_w   double precision[];
begin
  ids := '{}'; kinds := '{}'; details := '{}'; weights := '{}';
  if not memory_search.caller_reads_owner(p_owner) then
    return;
  end if;

  -- Memories citing the files: their file entities by key (the unique index), then the links.
  if coalesce(cardinality(p_files), 0) > 0 then
    select coalesce(array_agg(y.id), '{}'), coalesce(array_agg(y.path), '{}') into v_ids, v_det
      from (select x.id, x.path
              from (select distinct on (m.id) m.id, f.path, m.importance, m.strength
                      from unnest(p_files) as f(path)
                      join public.memory_entities e
                        on e.owner_id = p_owner and e.normalized_name = public.memory_entity_key(f.path)
                       and e.entity_type = 'file' and regexp_replace(e.canonical_name, '^(\./)+', '') = f.path
                      join public.memory_entity_links l on l.entity_id = e.id and l.owner_id = p_owner
                      join public.devai_memories m on m.id = l.memory_id
                     where m.owner_id = p_owner and m.is_valid and m.state = 'active' and m.strength > 0.05
                       and m.source is distinct from 'conversation' and (m.namespace || '/') ^@ any (p_scopes)
                     order by m.id, f.path) x
             order by x.importance desc, x.strength desc, x.id
             limit p_max_per_kind) y;
    ids := ids || v_ids; details := details || v_det;
    kinds := kinds || array_fill('file'::text, array[cardinality(v_ids)]);
    weights := weights || array_fill(1::double precision, array[cardinality(v_ids)]);
  end if;

  -- A directory's files: normalized_name keeps letters and digits only, so the range
  -- [key, key || U+10FFFF) holds every name starting with the key (the text_pattern_ops index);
  -- the canonical name then checks the directory boundary exactly. At most 200 files a directory.
  foreach v_dir in array coalesce(p_modules, '{}'::text[]) loop
    v_key := public.memory_entity_key(v_dir);
    continue when v_key = '';
    select coalesce(array_agg(x.id), '{}') into v_ids
      from (select distinct m.id, m.importance, m.strength
              from (select e.id from public.memory_entities e
                     where e.owner_id = p_owner
                       and e.normalized_name operator(pg_catalog.~>=~) v_key
                       and e.normalized_name operator(pg_catalog.~<~) (v_key || chr(1114111))
                       and e.entity_type = 'file'
                       and regexp_replace(e.canonical_name, '^(\./)+', '') ^@ (v_dir || '/')
                     limit 200) e
              join public.memory_entity_links l on l.entity_id = e.id and l.owner_id = p_owner
              join public.devai_memories m on m.id = l.memory_id
             where m.owner_id = p_owner and m.is_valid and m.state = 'active' and m.strength > 0.05
               and m.source is distinct from 'conversation' and (m.namespace || '/') ^@ any (p_scopes)
               and not (m.id = any (ids))
             order by m.importance desc, m.strength desc, m.id
             limit p_max_per_kind) x;
    ids := ids || v_ids;
    details := details || array_fill(v_dir, array[cardinality(v_ids)]);
    kinds := kinds || array_fill('module'::text, array[cardinality(v_ids)]);
    weights := weights || array_fill(0.7::double precision, array[cardinality(v_ids)]);
  end loop;

  -- Recorded on the branch, newest first (devai_memories_owner_branch).
  if p_branch is not null then
    select coalesce(array_agg(x.id), '{}') into v_ids
      from (select m.id from public.devai_memories m
             where m.owner_id = p_owner and m.metadata ? 'branch' and m.is_valid and m.state = 'active'
               and (m.metadata ->> 'branch') = p_branch
               and m.strength > 0.05 and m.source is distinct from 'conversation' and (m.namespace || '/') ^@ any (p_scopes)
             order by m.created_at desc, m.id
             limit p_max_per_kind) x;
    ids := ids || v_ids;
    details := details || array_fill(p_branch, array[cardinality(v_ids)]);
    kinds := kinds || array_fill('branch'::text, array[cardinality(v_ids)]);
    weights := weights || array_fill(0.6::double precision, array[cardinality(v_ids)]);
  end if;

  -- Background: per category the most important first (devai_memories_owner_category), then the
  -- best of them all.
  if coalesce(cardinality(p_categories), 0) > 0 then
    select coalesce(array_agg(x.id), '{}'), coalesce(array_agg(x.cat), '{}'), coalesce(array_agg(x.importance / 5.0), '{}')
      into v_ids, v_det, v_w
      from (select c.cat, b.id, b.importance
              from unnest(p_categories) as c(cat)
              cross join lateral (
                select m.id, m.importance, m.created_at from public.devai_memories m
                 where m.owner_id = p_owner and m.is_valid and m.state = 'active'
                   and (case when m.memory_type = 'procedural' then 'procedural' else m.metadata ->> 'category' end) = c.cat
                   and m.strength > 0.05 and m.source is distinct from 'conversation' and (m.namespace || '/') ^@ any (p_scopes)
                 order by m.importance desc, m.created_at desc
                 limit p_max_per_kind) b
             order by b.importance desc, b.created_at desc, b.id
             limit p_max_per_kind) x;
    ids := ids || v_ids; details := details || v_det; weights := weights || v_w;
    kinds := kinds || array_fill('background'::text, array[cardinality(v_ids)]);
  end if;

  -- Error memories since p_recent_since, newest first (devai_memories_owner_created).
  if p_recent_since is not null then
    select coalesce(array_agg(x.id), '{}') into v_ids
      from (select m.id from public.devai_memories m
             where m.owner_id = p_owner and m.created_at >= p_recent_since
               and m.is_valid and m.state = 'active' and m.strength > 0.05
               and (case when m.memory_type = 'procedural' then 'procedural' else m.metadata ->> 'category' end) = 'errors_and_fixes'
               and (m.namespace || '/') ^@ any (p_scopes)
             order by m.created_at desc, m.id desc
             limit p_max_per_kind) x;
    ids := ids || v_ids;
    details := details || array_fill(null::text, array[cardinality(v_ids)]);
    kinds := kinds || array_fill('recent_error'::text, array[cardinality(v_ids)]);
    weights := weights || array_fill(0.6::double precision, array[cardinality(v_ids)]);
  end if;
end;
$$;
grant execute on function memory_search.context_lookups(uuid, text[], text[], text[], text, text[], timestamptz, integer) to authenticated, service_role;
