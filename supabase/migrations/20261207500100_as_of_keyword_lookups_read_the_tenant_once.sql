-- The keyword lookups as of an instant (memory_search.keyword_postings with p_as_of) read the
-- tenant's rows once per search, not once per term. Before, the memories changed since the
-- instant were read once (their words of then), and then each term, and the common terms
-- together once more, scanned the tenant's rows again for the memories unchanged since: no index
-- serves these lookups (the rows a search as of an instant needs include those invalidated or
-- forgotten since, which the keyword index leaves out), so each term read all the tenant's pages.
-- Now one pass reads the scopes' memories of then that match any of the terms (the terms' OR),
-- with their words of then (today's for a memory unchanged since; its history row's for one
-- changed since, derived as before), and each term, and the common terms together, match those.
-- The bench corpus' largest tenant (21,429 memories, 15,455 pages; 4,097 changed since the
-- instant): a six-word question 55,600 buffers, now 27,100; five identifiers (each term read the
-- tenant) 90,400, now 24,900. Same counts and candidates; the common terms' memories, when more
-- than the cap match all of them, are taken in the one pass's order (in no particular order, as
-- before). pgTAP 99_as_of_keyword_lookups_read_the_tenant_once counts the rows read.
-- The live lookups that scan the tenant's rows (a scope above the keyed ones, past the walk's 256
-- namespaces) asked for live rows through a CASE on p_as_of, always null there since the as-of
-- lookups have their own branch: the generic plan could not see is_valid and state = 'active' in
-- it, so it read every row of the tenant, forgotten and invalidated ones too, not the live ones
-- through devai_memories_owner_namespace. Now the condition is written out (300 namespaces, 3,000
-- memories, 2,000 of them forgotten: three terms 6,316 rows and 6,983 buffers, now 2,681 and
-- 1,150; pgTAP 99_keyword_lookups_past_the_namespace_walk_read_live_rows). Everything else in the
-- function is as it was, its SET options restated.

CREATE OR REPLACE FUNCTION memory_search.keyword_postings(p_owner uuid, p_scopes text[], p_terms tsquery[], p_df_cap integer, p_max_candidates integer, p_as_of timestamp with time zone DEFAULT NULL::timestamp with time zone, p_exclude tsquery DEFAULT NULL::tsquery, p_after timestamp with time zone DEFAULT NULL::timestamp with time zone, p_before timestamp with time zone DEFAULT NULL::timestamp with time zone, p_types text[] DEFAULT NULL::text[], p_categories text[] DEFAULT NULL::text[], p_fields jsonb DEFAULT NULL::jsonb, OUT term_df integer[], OUT candidates uuid[])
 RETURNS record
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO ''
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
declare
  -- The request's filters: the candidates taken when every term is common pass them (the rare
  -- terms' matches are all taken, and filtered by the caller).
  v_filtered boolean := p_exclude is not null or p_after is not null or p_before is not null or p_types is not null
                        or p_categories is not null or p_fields is not null;
  v_keys   text[];
  v_scoped boolean;
  v_ids    uuid[];
  v_rare   text[] := '{}';
  v_q      tsquery;
  v_sq     tsquery;
  v_order  integer[];
  v_live   tsquery[];
  v_above  boolean;
  v_whole  boolean;
  v_factor numeric;
  v_lexemes text[];
  v_common text[] := '{}';
  v_then_ids uuid[] := '{}';
  v_then_fts tsvector[] := '{}';
  v_any    tsquery;
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
  -- Per scope, once: above the keyed ones, or a whole keyed scope. The statistics used below are
  -- per key, so they stand for a request only when no scope asked is below its key's
  -- (devai/project/p/ci under devai/project/p).
  select bool_or(x.above), bool_and(x.above or memory_private.keyword_scope(x.base) = x.base)
    into v_above, v_whole
    from (select rtrim(s, '/') as base,
                 split_part(rtrim(s, '/'), '/', 2) = ''
                 or (split_part(rtrim(s, '/'), '/', 2) = 'project' and split_part(rtrim(s, '/'), '/', 3) = '') as above
            from unnest(p_scopes) s) x;
  v_scoped := p_as_of is null and not coalesce(v_above, false);
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

  -- A one-word term the statistics estimate in keyword_common_estimate_factor x the cap of one of
  -- these scopes' memories or more (memory_private.keyword_common_terms) is common without being
  -- counted: counting it builds a bitmap of all its matches to learn only that there are more than
  -- the cap. Only for whole scopes: the statistics are per scope key.
  if v_scoped and v_whole then
    v_factor := public.memory_setting('keyword_common_estimate_factor');
    if v_factor > 0 then
      -- Each one-word term's lexeme (null for a phrase or a prefix), then one primary-key probe per
      -- lexeme and key ('<key>:<lexeme>'; a key has no ':').
      select array_agg(replace(m[1], '''''', '''') order by t.i) into v_lexemes
        from unnest(p_terms) with ordinality t(q, i)
        left join lateral regexp_match(t.q::text, '^''((?:[^'']|'''')*)''$') m on true;
      select coalesce(array_agg(distinct substr(c.term, strpos(c.term, ':') + 1)), '{}') into v_common
        from memory_private.keyword_common_terms c
       where c.term = any (array(select k.key || ':' || l.lexeme
                                   from unnest(v_lexemes) l(lexeme) cross join unnest(v_keys) k(key)
                                  where l.lexeme is not null))
         and c.estimated_rows >= v_factor * p_df_cap;
    end if;
  end if;

  -- As of an instant, the scopes' memories of then that match any of the terms, with their words
  -- of then, read in one pass over the tenant's rows: every term's lookup, and the common terms'
  -- below, match these. (Each term read the tenant's rows again, and the common terms once more:
  -- a 21,000-memory tenant's 15,500 pages per term. No index serves this: the rows a search as of
  -- an instant needs include those invalidated or forgotten since, which the keyword index leaves
  -- out.) A memory changed since has the words of its content then, derived as
  -- memory_search.fts_then derives them (its content at its last change then, in memory_history),
  -- in this one statement: a call of fts_then per memory cost 2.5x the lookup itself.
  if p_as_of is not null and cardinality(p_terms) > 0 then
    foreach v_q in array p_terms loop
      continue when v_q is null;  -- a null term matches nothing (its lookup below finds none)
      v_any := case when v_any is null then v_q else v_any || v_q end;
    end loop;
    select coalesce(array_agg(w.id), '{}'), coalesce(array_agg(w.fts), '{}')
      into v_then_ids, v_then_fts
      from (select m.id,
                   case when h.content is null or h.content = m.content then m.fts
                        else to_tsvector('english'::regconfig, h.content)
                             || array_to_tsvector(public.memory_identifier_lexemes(h.content)) end as fts
              from public.devai_memories m
              left join lateral (select x.new_content as content
                                   from public.memory_history x
                                  where m.updated_at > p_as_of
                                    and x.memory_id = m.id and x.ts <= p_as_of and x.meta ? 'state'
                                  order by x.ts desc, x.seq desc nulls last, x.id desc
                                  limit 1) h on true
             where m.owner_id = p_owner
               and m.created_at <= p_as_of and (m.valid_until is null or m.valid_until > p_as_of)
               and m.source is distinct from 'conversation'
               and (m.namespace || '/') ^@ any (p_scopes)
            offset 0) w
     where w.fts @@ v_any;
  end if;

  for i in 1 .. coalesce(cardinality(p_terms), 0) loop
    v_q := p_terms[i];
    if v_lexemes[i] = any (v_common) then
      term_df := term_df || (p_df_cap + 1);
      v_rare := v_rare || ''::text;
      continue;
    end if;
    if v_scoped then
      v_sq := memory_search.scoped_query(v_q, v_keys);
      select array_agg(x.id) into v_ids
        from (select m.id from public.devai_memories m
               where pg_catalog.strip(m.fts_scoped) @@ v_sq
                 and m.is_valid and m.state = 'active' and m.source is distinct from 'conversation'
                 -- The key pins the tenant already; this re-check (against a key collision) is
                 -- written so the planner cannot add the tenant's whole owner index to the lookup.
                 and m.owner_id::text = p_owner::text
                 and (m.namespace || '/') ^@ any (p_scopes)
                 and m.fts @@ v_q
               limit p_df_cap + 1) x;
    elsif p_as_of is null then
      select array_agg(x.id) into v_ids
        from (select m.id from public.devai_memories m
               where m.owner_id = p_owner
                 and m.is_valid and m.state = 'active'
                 and m.source is distinct from 'conversation'
                 and m.fts @@ v_q
                 and (m.namespace || '/') ^@ any (p_scopes)
               limit p_df_cap + 1) x;
    else
      -- As of an instant: on the words of then of the memories read above.
      select array_agg(x.id) into v_ids
        from (select m.id from unnest(v_then_ids, v_then_fts) w(id, fts)
                join public.devai_memories m on m.id = w.id
               where w.fts @@ v_q
                 and (select a.held from public.memory_at(m, p_as_of) a)
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
    -- With a filter, the rare terms' matches may all fail it (a rare word of the question only
    -- older memories hold, under a window): then the common terms' memories that pass it are the
    -- candidates, below, as if the rare terms matched nothing.
    if not v_filtered or exists (
         select from public.devai_memories m
          where m.id = any (candidates)
            and case when p_as_of is null
                     then memory_search.passes_filters(m.fts, m.created_at, m.memory_type, m.metadata, m.pinned,
                                                       m.importance, m.updated_at, p_exclude, p_after, p_before,
                                                       p_types, p_categories, p_fields)
                     else memory_search.passes_filters_at(m.id, p_as_of, p_exclude, p_after, p_before, p_types,
                                                          p_categories, p_fields) end) then
      return;
    end if;
    candidates := '{}';
  end if;

  -- Every term that matches is common (or, under a filter, every rare term's matches fail it): the
  -- memories matching all the common ones.
  select coalesce(array_agg(q order by i), '{}') into v_live
    from unnest(p_terms) with ordinality t(q, i) where term_df[t.i] > p_df_cap;
  if cardinality(v_live) = 0 then
    return;
  end if;
  -- The memories matching all of them (and the request's filters), at most the cap. Not those
  -- matching any of them: a
  -- common word's matches, taken in no particular order, are noise, and finding them cost a
  -- bitmap of every memory holding any of the words (the vector signal covers what the words
  -- alone do not pin down).
  v_q := (select string_agg('(' || q::text || ')', ' & ')::tsquery from unnest(v_live) q);
  if v_scoped then
    v_sq := memory_search.scoped_query(v_q, v_keys);
    select coalesce(array_agg(x.id), '{}') into candidates
      from (select m.id from public.devai_memories m
             where pg_catalog.strip(m.fts_scoped) @@ v_sq
               and m.is_valid and m.state = 'active' and m.source is distinct from 'conversation'
               and m.owner_id::text = p_owner::text
               and (m.namespace || '/') ^@ any (p_scopes)
               and m.fts @@ v_q
               and (not v_filtered or memory_search.passes_filters(m.fts, m.created_at, m.memory_type, m.metadata, m.pinned,
                                                                   m.importance, m.updated_at, p_exclude, p_after, p_before,
                                                                   p_types, p_categories, p_fields))
             limit p_df_cap) x;
  elsif p_as_of is null then
    select coalesce(array_agg(x.id), '{}') into candidates
      from (select m.id from public.devai_memories m
             where m.owner_id = p_owner
               and m.is_valid and m.state = 'active'
               and m.source is distinct from 'conversation'
               and m.fts @@ v_q
               and (m.namespace || '/') ^@ any (p_scopes)
               and (not v_filtered
                    or memory_search.passes_filters(m.fts, m.created_at, m.memory_type, m.metadata, m.pinned,
                                                    m.importance, m.updated_at, p_exclude, p_after, p_before,
                                                    p_types, p_categories, p_fields))
             limit p_df_cap) x;
  else
    select coalesce(array_agg(x.id), '{}') into candidates
      from (select m.id from unnest(v_then_ids, v_then_fts) w(id, fts)
              join public.devai_memories m on m.id = w.id
             where w.fts @@ v_q
               and (select a.held from public.memory_at(m, p_as_of) a)
               and (not v_filtered or memory_search.passes_filters_at(m.id, p_as_of, p_exclude, p_after, p_before, p_types,
                                                                      p_categories, p_fields))
             limit p_df_cap) x;
  end if;
end;
$function$;
