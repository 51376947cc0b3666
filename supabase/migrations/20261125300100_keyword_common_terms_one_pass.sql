-- Keyword search when every query term that matches is common (more than keyword_df_cap memories
-- each): memory_search.keyword_postings took the memories matching all of them, then, while fewer
-- than the cap, "those matching any of them". In the scoped lookup that second pass was built by
-- scoped_query, which ANDs every lexeme it is given, so it found nothing new and only cost a
-- second index scan; outside it (an as-of or tenant-wide search) it brought up to the cap of
-- memories holding any common word, in no particular order. The second pass is gone: the
-- candidates are the memories matching every term (the same as before in the scoped lookup, one
-- index scan fewer). And a scope above the keyed ones (the tenant's whole memory, every
-- project) is looked up by the keys of the namespaces it holds instead of scanning the tenant's
-- rows (the bench's tenant-wide hybrid search, biggest tenant at 100k: 152 ms). Body otherwise as
-- 20261124900100.
create or replace function memory_search.keyword_postings(p_owner uuid, p_scopes text[], p_terms tsquery[], p_df_cap integer, p_max_candidates integer, p_as_of timestamp with time zone DEFAULT NULL::timestamp with time zone, OUT term_df integer[], OUT candidates uuid[])
 RETURNS record
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO ''
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
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
  -- Whole scopes (or deeper ones) are looked up by their keys in fts_scoped. A scope above them
  -- (the tenant's whole memory, 'devai', or every project, 'devai/project') is looked up by the
  -- keys of the namespaces it holds, found by walking the tenant's namespace index from one
  -- distinct namespace to the next (one index probe each; at most 256 namespaces); past that, or
  -- as of an instant, the tenant's rows are scanned.
  v_scoped := p_as_of is null and not exists (
    select 1 from unnest(p_scopes) s
     where split_part(rtrim(s, '/'), '/', 2) = ''
        or (split_part(rtrim(s, '/'), '/', 2) = 'project' and split_part(rtrim(s, '/'), '/', 3) = ''));
  if v_scoped then
    select array_agg(distinct memory_private.keyword_scope_key(p_owner, memory_private.keyword_scope(rtrim(s, '/'))))
      into v_keys from unnest(p_scopes) s;
  elsif p_as_of is null then
    with recursive walk (ns, n) as (
      (select m.namespace, 1 from public.devai_memories m
        where m.owner_id = p_owner and m.is_valid and m.state = 'active'
        order by m.namespace using operator(pg_catalog.~<~) limit 1)
      union all
      select (select m.namespace from public.devai_memories m
               where m.owner_id = p_owner and m.is_valid and m.state = 'active'
                 and m.namespace operator(pg_catalog.~>~) w.ns
               order by m.namespace using operator(pg_catalog.~<~) limit 1),
             w.n + 1
        from walk w
       where w.ns is not null and w.n <= 256
    )
    select coalesce(array_agg(distinct memory_private.keyword_scope_key(p_owner, memory_private.keyword_scope(w.ns)))
                      filter (where (w.ns || '/') ^@ any (p_scopes)), '{}'),
           not bool_or(w.n > 256 and w.ns is not null)
      into v_keys, v_scoped
      from walk w
     where w.ns is not null;
    v_scoped := coalesce(v_scoped, true);
  end if;

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
  -- The memories matching all of them, at most the cap. Not those matching any of them: a
  -- common word's matches, taken in no particular order, are noise, and finding them cost a
  -- bitmap of every memory holding any of the words (the vector signal covers what the words
  -- alone do not pin down).
  v_q := (select string_agg('(' || q::text || ')', ' & ')::tsquery from unnest(v_live) q);
  if v_scoped then
    v_sq := memory_search.scoped_query(v_q, v_keys);
    select coalesce(array_agg(x.id), '{}') into candidates
      from (select m.id from public.devai_memories m
             where m.fts_scoped @@ v_sq
               and m.is_valid and m.state = 'active' and m.source is distinct from 'conversation'
               and m.owner_id::text = p_owner::text
               and (m.namespace || '/') ^@ any (p_scopes)
               and m.fts @@ v_q
             limit p_df_cap) x;
  else
    select coalesce(array_agg(x.id), '{}') into candidates
      from (select m.id from public.devai_memories m
             where m.owner_id = p_owner
               and (case when p_as_of is null then m.is_valid and m.state = 'active'
                         else m.created_at <= p_as_of and (select a.held from public.memory_at(m, p_as_of) a) end)
               and m.source is distinct from 'conversation'
               and m.fts @@ v_q
               and (m.namespace || '/') ^@ any (p_scopes)
             limit p_df_cap) x;
  end if;
end;
$function$;
