-- As of an instant, the readers pass public.memory_at the fields it reads, not whole rows (issue
-- 19). memory_search.keyword_postings (the held test of a term's matches then),
-- memory_search.passes_filters_at, match_memories (each nearest memory's fields of then) and the
-- search's answer row called memory_at(m, ...) with a memory's whole row, which is built with every
-- field read in full: each memory's 512-d embedding, two TOAST chunks, read to be thrown away (the
-- way memory_graph_visible stopped it, migration 20261209200000). They now call
-- memory_search.memory_at_fields with the columns. Bodies: keyword_postings of 20261208600000,
-- match_memories of 20261208300000 (SET options restated), passes_filters_at of 20261203400100 and
-- memory_search.hybrid_search of 20261209700000; only those calls change.

-- public.memory_at for a memory given by the fields it reads (those the held test reads, and, for
-- its fields of then, the ones it shows): a whole row is built with every field read in full, so
-- memory_at(m, ...) read each memory's 512-d embedding (two TOAST chunks) to throw it away.
create or replace function memory_search.memory_at_fields(
  p_at timestamptz, p_id uuid, p_created_at timestamptz, p_valid_until timestamptz, p_is_valid boolean, p_state text,
  p_superseded_by uuid default null, p_content text default null, p_namespace text default null,
  p_memory_type text default null, p_priority text default null, p_source text default null,
  p_importance smallint default null, p_pinned boolean default null, p_metadata jsonb default null)
returns table (held boolean, content text, is_valid boolean, state text, superseded_by uuid, namespace text,
               memory_type text, priority text, source text, importance smallint, pinned boolean, metadata jsonb)
language plpgsql
stable
rows 1
set search_path = ''
as $$
declare
  v_m public.devai_memories;
begin
  v_m.id := p_id;
  v_m.created_at := p_created_at;
  v_m.valid_until := p_valid_until;
  v_m.is_valid := p_is_valid;
  v_m.state := p_state;
  v_m.superseded_by := p_superseded_by;
  v_m.content := p_content;
  v_m.namespace := p_namespace;
  v_m.memory_type := p_memory_type;
  v_m.priority := p_priority;
  v_m.source := p_source;
  v_m.importance := p_importance;
  v_m.pinned := p_pinned;
  v_m.metadata := p_metadata;
  return query select * from public.memory_at(v_m, p_at);
end;
$$;

revoke all on function memory_search.memory_at_fields(timestamptz, uuid, timestamptz, timestamptz, boolean, text, uuid, text, text, text, text, text, smallint, boolean, jsonb) from public, anon;
grant execute on function memory_search.memory_at_fields(timestamptz, uuid, timestamptz, timestamptz, boolean, text, uuid, text, text, text, text, text, smallint, boolean, jsonb) to authenticated, service_role;

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
                        else public.memory_content_fts(h.content) end as fts
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
                 and (select a.held from memory_search.memory_at_fields(p_as_of, m.id, m.created_at, m.valid_until, m.is_valid, m.state) a)
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
               and (select a.held from memory_search.memory_at_fields(p_as_of, m.id, m.created_at, m.valid_until, m.is_valid, m.state) a)
               and (not v_filtered or memory_search.passes_filters_at(m.id, p_as_of, p_exclude, p_after, p_before, p_types,
                                                                      p_categories, p_fields))
             limit p_df_cap) x;
  end if;
end;
$function$;
CREATE OR REPLACE FUNCTION public.match_memories(query_embedding extensions.vector, match_namespace text, match_count integer DEFAULT 15, similarity_threshold double precision DEFAULT 0.7, match_owner uuid DEFAULT auth.uid(), match_embedding_model text DEFAULT 'text-embedding-3-small'::text, match_namespaces text[] DEFAULT NULL::text[], as_of timestamp with time zone DEFAULT NULL::timestamp with time zone, with_relations boolean DEFAULT true, filter_after timestamp with time zone DEFAULT NULL::timestamp with time zone, filter_before timestamp with time zone DEFAULT NULL::timestamp with time zone, filter_memory_types text[] DEFAULT NULL::text[], filter_categories text[] DEFAULT NULL::text[], filter_exclude tsquery DEFAULT NULL::tsquery, filter_fields jsonb DEFAULT NULL::jsonb)
 RETURNS TABLE(id uuid, content text, similarity double precision, memory_type text, namespace text, strength double precision, priority text, importance smallint, pinned boolean, source text, metadata jsonb, session_id text, access_count integer, last_accessed_at timestamp with time zone, created_at timestamp with time zone, updated_at timestamp with time zone, max_relation_strength real)
 LANGUAGE plpgsql
 STABLE ROWS 20
 SET search_path TO ''
 SET "hnsw.iterative_scan" TO 'relaxed_order'
 SET "hnsw.ef_search" TO '100'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
declare
  v_bases     text[];
  v_uppers    text[];
  v_scopes    text[];
  v_exact_max integer;
  v_index     regclass;
  v_in_scope  integer;
  v_sort      text;
  v_in_window integer;
  v_from      timestamptz := coalesce(filter_after, '-infinity');
  v_until     timestamptz := coalesce(filter_before, 'infinity');
  v_walk_ids  uuid[];
  v_walk_dist double precision[];
  v_fallback  integer;
  v_short     boolean := false;
  -- The request's filters (time window, types, categories, exclusions) hold inside each path, so
  -- a strict filter gets its match_count nearest memories that pass it, not what passes among
  -- the nearest of all.
  v_filtered  boolean := filter_after is not null or filter_before is not null or filter_memory_types is not null
                         or filter_categories is not null or filter_exclude is not null or filter_fields is not null;
begin
  if match_count is null or match_count < 1 or match_count > 200 then
    raise exception 'match_count must be between 1 and 200, got %', match_count using errcode = '22023';
  end if;
  -- The scopes as namespace bases without the trailing '/', each once, none inside another (a
  -- base whose parent is searched too adds nothing, and would count its rows twice).
  with bases as (
    select distinct rtrim(s, '/') as base
      from unnest(coalesce(match_namespaces, '{}'::text[]) || match_namespace) as s
     where s is not null and rtrim(s, '/') <> ''
  )
  select coalesce(array_agg(b.base order by b.base), '{}') into v_bases
    from bases b
   where not exists (select from bases o where o.base <> b.base and (b.base || '/') ^@ (o.base || '/'));
  if cardinality(v_bases) = 0 then
    raise exception 'at least one namespace scope is required' using errcode = '22023';
  end if;
  -- Scopes match by path segment, never LIKE: base 'devai/project/task_forge' matches itself and
  -- 'devai/project/task_forge/...', never 'devai/project/taskxforge' nor '.../task_forge2'.
  select array_agg(b || '/') into v_scopes from unnest(v_bases) b;
  -- Each scope's byte range ends before base || '0' ('0' follows '/'), computed here so the index
  -- condition holds only values (see the top of this file).
  select array_agg(b || '0' order by o) into v_uppers from unnest(v_bases) with ordinality as u(b, o);
  v_index := public.memory_vector_index_of(match_owner);
  v_exact_max := public.memory_exact_scan_limit(match_count, v_index);

  -- As of an instant: what the tenant's memory held then (public.memory_at: recorded by then,
  -- validity not closed, valid and active after its last change then), filtered and answered with
  -- its fields as they were then (content, type, scope, priority, importance, pin, source,
  -- metadata). Exact: the invalidated rows it may need are not in the HNSW index. Strength is not
  -- filtered (it is today's, not then's).
  if as_of is not null then
    return query
    -- Every row of the scope is compared (its distance), but what it held then (memory_at: a
    -- history lookup per row) and the filters are read only in distance order, until match_count
    -- rows held then and passed: reading them for every row of the scope first cost a function
    -- call and a history probe per row (a 8,500-row scope: 130,000 buffers and 373 ms; 84,000
    -- and about 130 ms so). The rows are sorted by distance with their row address, and each
    -- one checked is read again by that address (a TID scan, one page).
    with nearest as materialized (
      select s.id, r.content, r.memory_type, r.namespace, r.priority, r.importance, r.pinned, r.source, r.metadata,
             s.distance
        from (select m.ctid as tid, m.id, m.embedding operator(extensions.<=>) query_embedding as distance
                from public.devai_memories m
               where m.owner_id = match_owner
                 and m.created_at <= as_of
                 and (m.valid_until is null or m.valid_until > as_of)
                 and m.source is distinct from 'conversation'
                 and m.embedding_model = match_embedding_model
                 and m.embedding is not null
                 and (m.namespace || '/') ^@ any (v_scopes)
               order by distance, m.id
              offset 0) as s
       cross join lateral (
         select a.held, a.content, a.memory_type, a.namespace, a.priority, a.importance, a.pinned, a.source, a.metadata,
                m.content as content_now, m.fts, m.created_at, m.updated_at
           from public.devai_memories m
          cross join lateral memory_search.memory_at_fields(as_of, m.id, m.created_at, m.valid_until, m.is_valid, m.state,
                                                            m.superseded_by, m.content, m.namespace, m.memory_type, m.priority,
                                                            m.source, m.importance, m.pinned, m.metadata) a
          where m.ctid = s.tid
         offset 0) as r
       where r.held
         and (not v_filtered or memory_search.passes_filters(case when filter_exclude is null or r.updated_at <= as_of then r.fts
                                                                  else memory_search.fts_then(s.id, r.content_now, r.fts, as_of) end,
                                                             r.created_at, r.memory_type, r.metadata, r.pinned, r.importance,
                                                             case when r.updated_at > as_of and filter_fields ?| array['updated_after', 'updated_before']
                                                                  then memory_search.updated_at_then(s.id, r.created_at, r.updated_at, as_of)
                                                                  else r.updated_at end,
                                                             filter_exclude, filter_after, filter_before, filter_memory_types, filter_categories, filter_fields))
       order by s.distance, s.id
       limit match_count
    )
    select n.id, n.content, 1 - n.distance, n.memory_type, n.namespace, m.strength, n.priority,
           n.importance, n.pinned, n.source, n.metadata, m.session_id, m.access_count,
           m.last_accessed_at, m.created_at, m.updated_at,
           rs.strength
      from nearest n
      join public.devai_memories m on m.id = n.id
      left join memory_search.relation_strengths(match_owner, case when with_relations then array(select n2.id from nearest n2) end, as_of, v_scopes) rs
        on rs.id = n.id
     where 1 - n.distance > similarity_threshold
     order by n.distance, n.id;
    return;
  end if;

  -- The scope's size up to the exact path's limit, as the write path keeps it
  -- (public.memory_scope_size: one index probe per scope base; migration 20261208300000).
  -- Counting the scope's index entries instead cost up to the limit's heap fetches per search.
  v_in_scope := public.memory_scope_size(match_owner, v_bases, v_exact_max);

  -- Two statements, not one with both branches: a UNION ALL of the two paths, gated by
  -- v_in_scope, planned badly (693 ms p50 instead of 11). The projection they share is short.
  if v_in_scope > v_exact_max then
    -- A large scope, but a time window few of the tenant's memories fall in (a `when` question's
    -- week): those are compared exactly, read by their (owner_id, created_at) range. The index walk
    -- would pass over most of the scope to find them (a week of a 21k-memory tenant: 25 ms for half
    -- the answer; an empty window, 66 ms for none).
    if filter_after is not null or filter_before is not null then
      select count(*) into v_in_window
        from (select 1 from public.devai_memories m
               where m.owner_id = match_owner and m.created_at >= v_from and m.created_at < v_until
               limit v_exact_max + 1) as counted;
    end if;
    if v_in_window <= v_exact_max then
      return query
      with nearest as materialized (
        select s.id, s.distance
          from (select m.id, m.embedding operator(extensions.<=>) query_embedding as distance
                  from public.devai_memories m
                 where m.owner_id = match_owner and m.created_at >= v_from and m.created_at < v_until
                   and m.is_valid and m.state = 'active'
                   and m.strength > 0.05
                   and m.source is distinct from 'conversation'
                   and m.embedding_model = match_embedding_model
                   and m.embedding is not null
                   and (m.namespace || '/') ^@ any (v_scopes)
                   and memory_search.passes_filters(m.fts, m.created_at, m.memory_type, m.metadata, m.pinned, m.importance,
                                                    m.updated_at, filter_exclude, filter_after, filter_before,
                                                    filter_memory_types, filter_categories, filter_fields)
                offset 0) as s
         order by s.distance, s.id
         limit match_count
      )
      select n.id, m.content, 1 - n.distance, m.memory_type, m.namespace, m.strength, m.priority,
             m.importance, m.pinned, m.source, m.metadata, m.session_id, m.access_count,
             m.last_accessed_at, m.created_at, m.updated_at,
             rs.strength
        from nearest n
        join public.devai_memories m on m.id = n.id
        left join memory_search.relation_strengths(match_owner, case when with_relations then array(select n2.id from nearest n2) end, null, v_scopes) rs
          on rs.id = n.id
       where 1 - n.distance > similarity_threshold
       order by n.distance, n.id;
      return;
    end if;

    -- Large scope: the HNSW index, filtered while it is walked (iterative scan, so selective filters
    -- keep recall). Sorting is switched off for this statement only, so the planner cannot fall
    -- back to sorting the whole scope; the rows found are re-sorted exactly below. With a filter
    -- of the request's own that few memories pass, the walk goes on until it has match_count of
    -- them or has read pgvector's hnsw.max_scan_tuples index entries (20,000; a filter nothing
    -- passes costs about 65 ms in a 100k-memory index). A bound of 2,000 was tried: 7 ms, but the
    -- entries of other tenants and dead rows count too, and it missed most of what a user's filter
    -- in a shared index should find.
    v_sort := current_setting('enable_sort');
    perform set_config('enable_sort', 'off', true);
    -- A tenant with its own index: the planner can use that partial index only in a plan made for
    -- this owner, so this statement is planned for this call (the function's SET clause restores
    -- plan_cache_mode when it returns).
    if v_index is distinct from to_regclass('public.devai_memories_embedding_hnsw') then
      perform set_config('plan_cache_mode', 'force_custom_plan', true);
    end if;
    select coalesce(array_agg(w.id order by w.distance, w.id), '{}'), coalesce(array_agg(w.distance order by w.distance, w.id), '{}')
      into v_walk_ids, v_walk_dist
      from (select m.id, m.embedding operator(extensions.<=>) query_embedding as distance
              from public.devai_memories m
             where m.owner_id = match_owner
               and m.is_valid
               and m.state = 'active'
               and m.strength > 0.05
               and m.source is distinct from 'conversation'
               and m.embedding_model = match_embedding_model
               and m.embedding is not null
               and (m.namespace || '/') ^@ any (v_scopes)
               and (not v_filtered or memory_search.passes_filters(m.fts, m.created_at, m.memory_type, m.metadata, m.pinned, m.importance, m.updated_at,
                                                                   filter_exclude, filter_after, filter_before, filter_memory_types, filter_categories, filter_fields))
             order by m.embedding operator(extensions.<=>) query_embedding
             limit match_count) as w;
    perform set_config('enable_sort', v_sort, true);
    -- A walk that comes back with fewer than match_count may have stopped early, not run out of
    -- memories: pgvector's graph walk ends once it reaches no new entries, and many index entries
    -- of one vector (one text written again and again, by any tenant; dead entries count until
    -- vacuum) leave the graph's links within those copies. The walk then returned none of 5 live
    -- memories that the exact comparison finds (pgTAP 08). A scope of at most
    -- exact_scan_fallback_max_rows memories is then compared exactly below; a larger one keeps
    -- what the walk found.
    -- The setting and the count are read only for a walk that came back short (a full one, the
    -- usual case, pays nothing for the fallback). The scope is counted afresh here
    -- (memory_search.scope_rows), not read from the kept counts: a kept count too large (a drift)
    -- sent this small scope to the walk, and must not also keep the walk's short answer.
    if cardinality(v_walk_ids) < match_count then
      v_fallback := public.memory_setting('exact_scan_fallback_max_rows')::integer;
      v_short := memory_search.scope_rows(match_owner, v_bases, v_fallback) <= v_fallback;
    end if;
    if not v_short then
      return query
      with nearest as (
        select w.id, w.distance from unnest(v_walk_ids, v_walk_dist) as w(id, distance)
      )
      select n.id, m.content, 1 - n.distance, m.memory_type, m.namespace, m.strength, m.priority,
             m.importance, m.pinned, m.source, m.metadata, m.session_id, m.access_count,
             m.last_accessed_at, m.created_at, m.updated_at,
             rs.strength
        from nearest n
        join public.devai_memories m on m.id = n.id
        left join memory_search.relation_strengths(match_owner, case when with_relations then v_walk_ids end, null, v_scopes) rs
          on rs.id = n.id
       where 1 - n.distance > similarity_threshold
       order by n.distance, n.id;
      return;
    end if;
  end if;

  -- A scope of at most v_exact_max memories, or a larger one whose walk came back short (above):
  -- compare every vector in it (exact, recall 1).
  return query
  -- One lookup per scope (a lateral subquery that offset 0 keeps from being flattened into a
  -- join): each scope's range is then an index condition. As a plain join, the generic plan
  -- read every row of the tenant and applied the ranges as a join filter (a 109-row scope of
  -- a 21k-row tenant: 33 ms instead of under 1; the bench's same-size check).
  with in_scope as materialized (
    select m.id, m.distance
      from unnest(v_bases, v_uppers) as b(base, upper)
     cross join lateral (
       select m.id, m.embedding operator(extensions.<=>) query_embedding as distance
         from public.devai_memories m
        where m.owner_id = match_owner and m.is_valid and m.state = 'active'
          and m.namespace operator(pg_catalog.~>=~) b.base
          and m.namespace operator(pg_catalog.~<~) b.upper
          and (m.namespace = b.base or m.namespace ^@ (b.base || '/'))
          and m.strength > 0.05
          and m.source is distinct from 'conversation'
          and m.embedding_model = match_embedding_model
          and m.embedding is not null
          and (not v_filtered or memory_search.passes_filters(m.fts, m.created_at, m.memory_type, m.metadata, m.pinned, m.importance, m.updated_at,
                                                              filter_exclude, filter_after, filter_before, filter_memory_types, filter_categories, filter_fields))
       offset 0) as m
  ),
  nearest as (
    select s.id, s.distance from in_scope s order by s.distance, s.id limit match_count
  )
  select n.id, m.content, 1 - n.distance, m.memory_type, m.namespace, m.strength, m.priority,
         m.importance, m.pinned, m.source, m.metadata, m.session_id, m.access_count,
         m.last_accessed_at, m.created_at, m.updated_at,
         rs.strength
    from nearest n
    join public.devai_memories m on m.id = n.id
    left join memory_search.relation_strengths(match_owner, case when with_relations then array(select n2.id from nearest n2) end, null, v_scopes) rs
      on rs.id = n.id
   where 1 - n.distance > similarity_threshold
   order by n.distance, n.id;
  return;
end;
$function$;
CREATE OR REPLACE FUNCTION memory_search.passes_filters_at(p_id uuid, p_at timestamp with time zone, p_exclude tsquery, p_after timestamp with time zone, p_before timestamp with time zone, p_types text[], p_categories text[], p_fields jsonb)
 RETURNS boolean
 LANGUAGE plpgsql
 STABLE
 SET search_path TO ''
AS $function$
begin
  return coalesce((
    select memory_search.passes_filters(case when p_exclude is null or m.updated_at <= p_at then m.fts
                                             else memory_search.fts_then(m.id, m.content, m.fts, p_at) end,
                                        m.created_at, a.memory_type, a.metadata, a.pinned, a.importance,
                                        case when m.updated_at > p_at and p_fields ?| array['updated_after', 'updated_before']
                                             then memory_search.updated_at_then(m.id, m.created_at, m.updated_at, p_at)
                                             else m.updated_at end,
                                        p_exclude, p_after, p_before, p_types, p_categories, p_fields)
      from public.devai_memories m
     cross join lateral memory_search.memory_at_fields(p_at, m.id, m.created_at, m.valid_until, m.is_valid, m.state,
                                                       m.superseded_by, m.content, m.namespace, m.memory_type, m.priority,
                                                       m.source, m.importance, m.pinned, m.metadata) a
     where m.id = p_id), false);
end;
$function$;

CREATE OR REPLACE FUNCTION memory_search.hybrid_search(query_text text, query_embedding extensions.vector DEFAULT NULL::extensions.vector, match_namespaces text[] DEFAULT NULL::text[], match_count integer DEFAULT 15, similarity_threshold double precision DEFAULT 0.7, match_embedding_model text DEFAULT NULL::text, match_owner uuid DEFAULT auth.uid(), search_mode text DEFAULT 'hybrid'::text, graph_depth integer DEFAULT 1, graph_edge_types text[] DEFAULT NULL::text[], filter_after timestamp with time zone DEFAULT NULL::timestamp with time zone, filter_before timestamp with time zone DEFAULT NULL::timestamp with time zone, filter_memory_types text[] DEFAULT NULL::text[], filter_categories text[] DEFAULT NULL::text[], prefer_memory_types text[] DEFAULT NULL::text[], recency_weight double precision DEFAULT 0, keyword_threshold double precision DEFAULT NULL::double precision, as_of timestamp with time zone DEFAULT NULL::timestamp with time zone, entity_terms text[] DEFAULT NULL::text[], graph_episodes boolean DEFAULT false, query_complexity text DEFAULT NULL::text, filter_fields jsonb DEFAULT NULL::jsonb, with_related boolean DEFAULT false) RETURNS TABLE(id uuid, content text, memory_type text, namespace text, strength double precision, priority text, importance smallint, pinned boolean, source text, metadata jsonb, session_id text, access_count integer, last_accessed_at timestamp with time zone, created_at timestamp with time zone, updated_at timestamp with time zone, max_relation_strength real, category text, similarity double precision, keyword_rank integer, keyword_score double precision, keyword_coverage double precision, vector_rank integer, graph_rank integer, graph_via uuid, graph_edge text, relevance double precision, related jsonb)
    LANGUAGE plpgsql STABLE ROWS 20
    SET search_path TO ''
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
#variable_conflict use_column
declare
  v_bases      text[];
  v_scopes     text[];
  v_k          double precision;
  v_w_kw       double precision := 0;
  v_w_vec      double precision := 0;
  v_w_graph    double precision := 0;
  v_w_recent   double precision := greatest(coalesce(recency_weight, 0), 0);
  v_max_terms  integer;
  v_df_cap     integer;
  v_min_cov    double precision;
  v_k1         double precision;
  v_b          double precision;
  v_seed_count integer;
  v_share      double precision;
  v_kw_share   double precision[] := '{}';
  v_vec_share  double precision[] := '{}';
  v_n          integer;
  v_terms_all  tsquery[];
  v_excludes   tsquery[];
  v_ids        uuid[];
  v_df         integer;
  v_terms_q    tsquery[] := '{}';
  v_terms_idf  double precision[] := '{}';
  v_then_ids   uuid[] := '{}';
  v_then_fts   tsvector[] := '{}';
  v_exclude    tsquery;
  v_filtered   boolean;
  v_cand       uuid[] := '{}';
  v_dfs        integer[];
  v_idf_total  double precision := 0;
  v_pool       integer;
  v_vec_pool   integer;
  -- signal lists (parallel arrays, best first)
  v_kw_ids     uuid[] := '{}';
  v_kw_score   double precision[] := '{}';
  v_kw_cov     double precision[] := '{}';
  v_vec_ids    uuid[] := '{}';
  v_vec_sims   double precision[] := '{}';
  v_conf       double precision;
  v_best_cov   double precision;
  v_seeds      uuid[] := '{}';
  v_g_ids      uuid[] := '{}';
  v_g_weight   double precision[] := '{}';
  v_g_via      uuid[] := '{}';
  v_g_edge     text[] := '{}';
  v_win_ids    uuid[] := '{}';
  v_win_rows   integer;
  v_rel_exclude tsquery;
  v_types      text[] := coalesce(graph_edge_types, array['related_to', 'supersedes', 'derived_from', 'temporal', 'causal']);
begin
  if match_count is null or match_count < 1 or match_count > 200 then
    raise exception 'match_count must be between 1 and 200, got %', match_count using errcode = '22023';
  end if;
  if search_mode is null or search_mode not in ('hybrid', 'vector', 'keyword') then
    raise exception 'search_mode must be hybrid, vector or keyword, got %', search_mode using errcode = '22023';
  end if;
  if graph_depth is null or graph_depth < 0 or graph_depth > 4 then
    raise exception 'graph_depth must be between 0 and 4, got %', graph_depth using errcode = '22023';
  end if;
  if query_complexity is not null and query_complexity not in ('simple', 'complex') then
    raise exception 'query_complexity must be simple or complex, got %', query_complexity using errcode = '22023';
  end if;

  -- Scopes as in match_memories: bases without the trailing '/', each once, none inside another.
  with bases as (
    select distinct rtrim(s, '/') as base
      from unnest(coalesce(match_namespaces, '{}'::text[])) as s
     where s is not null and rtrim(s, '/') <> ''
  )
  select coalesce(array_agg(b.base order by b.base), '{}') into v_bases
    from bases b
   where not exists (select from bases o where o.base <> b.base and (b.base || '/') ^@ (o.base || '/'));
  if cardinality(v_bases) = 0 then
    raise exception 'at least one namespace scope is required' using errcode = '22023';
  end if;
  select array_agg(b || '/') into v_scopes from unnest(v_bases) b;

  -- Settings (one read) and weights.
  select max(s.value) filter (where s.name = 'rrf_k'),
         max(s.value) filter (where s.name = 'keyword_max_terms'),
         max(s.value) filter (where s.name = 'keyword_df_cap'),
         max(s.value) filter (where s.name = 'keyword_min_coverage'),
         max(s.value) filter (where s.name = 'bm25_k1'),
         max(s.value) filter (where s.name = 'bm25_b'),
         max(s.value) filter (where s.name = 'graph_seed_count'),
         max(s.value) filter (where s.name = 'exact_scan_max_rows'),
         max(s.value) filter (where s.name = case when query_complexity = 'complex' then 'fusion_score_share_complex'
                                                    else 'fusion_score_share' end)
    into v_k, v_max_terms, v_df_cap, v_conf, v_k1, v_b, v_seed_count, v_win_rows, v_share
    from public.memory_settings s
   where s.name in ('rrf_k', 'keyword_max_terms', 'keyword_df_cap', 'keyword_min_coverage', 'bm25_k1', 'bm25_b',
                    'graph_seed_count', 'exact_scan_max_rows', 'fusion_score_share', 'fusion_score_share_complex');
  v_share := least(1, greatest(0, coalesce(v_share, 0)));
  v_min_cov := coalesce(keyword_threshold, v_conf);
  select w.keyword, w.vector, w.graph into v_w_kw, v_w_vec, v_w_graph
    from public.memory_search_weights w
   where w.embedding_model in (coalesce(match_embedding_model, '*'), '*')
   order by (w.embedding_model = '*')
   limit 1;
  v_w_kw := coalesce(v_w_kw, 1); v_w_vec := coalesce(v_w_vec, 1); v_w_graph := coalesce(v_w_graph, 0.5);
  if search_mode = 'vector' then v_w_kw := 0; v_w_graph := 0; v_w_recent := 0; end if;
  if search_mode = 'keyword' then v_w_vec := 0; v_w_graph := 0; v_w_recent := 0; end if;
  -- Without hops the graph signal is only the lookup of the names a who/what question asks about.
  if graph_depth = 0 and cardinality(coalesce(entity_terms, '{}')) = 0 then v_w_graph := 0; end if;
  if query_embedding is null or match_embedding_model is null then v_w_vec := 0; end if;
  v_pool := greatest(match_count * 3, 30);
  -- The vector list is only as deep as the answer (at least 20): in a big scope each further
  -- neighbour costs HNSW work under the filters, and a deep vector list adds little to the fusion.
  v_vec_pool := greatest(match_count, 20);

  -- The query's terms, and its exclusions (-word, -"a phrase"): a memory matching an exclusion is
  -- left out whichever signal finds it (the keyword, vector and graph lists alike). Without the
  -- keyword signal, the terms are read only when the text has an exclusion (reading them costs
  -- about as much as a small scope's vector search).
  if v_w_kw > 0 or query_text ~ '(^|\s)-("|[[:alpha:]][^\s"])' then
    select coalesce(array_agg(t.query order by t.ord) filter (where t.kind <> 'exclude'), '{}'),
           coalesce(array_agg(t.query order by t.ord) filter (where t.kind = 'exclude'), '{}')
      into v_terms_all, v_excludes
      from public.memory_keyword_terms(query_text, v_max_terms) with ordinality as t(term, kind, query, ord);
    select string_agg(q::text, ' | ')::tsquery into v_exclude from unnest(v_excludes) q;
  end if;
  v_filtered := filter_after is not null or filter_before is not null or filter_memory_types is not null
                or filter_categories is not null or v_exclude is not null or filter_fields is not null;

  -- Keyword signal. Each term's matches in scope, counted up to the cap (its document frequency);
  -- rare terms bring their matches in as candidates.
  if v_w_kw > 0 then
    -- The corpus size for idf, at least 1,000: a young tenant's few memories say little about how
    -- common a word is (with 3 memories, a word in one of them would look as common as "the").
    -- The scope is counted only to keyword_df_cap * 5 + 1: below 1,000 (the default cap, 25,
    -- counts to 126) the count cannot change the figure, and is not made.
    v_n := case when v_df_cap * 5 + 1 <= 1000 then 1000
                else greatest(public.memory_scope_size(match_owner, v_bases, v_df_cap * 5), 1000) end;
    -- Document frequencies (capped) and candidates, through the index (memory_search.keyword_postings).
    select p.term_df, p.candidates into v_dfs, v_cand
      from memory_search.keyword_postings(match_owner, v_scopes, v_terms_all, v_df_cap, v_pool * 2, as_of, v_exclude,
                                          filter_after, filter_before, filter_memory_types, filter_categories,
                                          filter_fields) p;
    for i in 1 .. coalesce(cardinality(v_terms_all), 0) loop
      v_df := coalesce(v_dfs[i], v_df_cap + 1);
      -- A term no memory has still counts in the best possible score (coverage's denominator):
      -- a memory that matches the common words of a question but not its rare ones is no answer.
      v_idf_total := v_idf_total + ln(1 + (greatest(v_n, v_df) - v_df + 0.5) / (v_df + 0.5));
      continue when v_df = 0;
      v_terms_q := v_terms_q || v_terms_all[i];
      v_terms_idf := v_terms_idf || ln(1 + (greatest(v_n, v_df) - v_df + 0.5) / (v_df + 0.5));
    end loop;

    -- BM25 over the candidates: sum of matched terms' idf, saturated and length-normalised
    -- (memories are a sentence or two, so a term's frequency in one is almost always 1).
    if coalesce(cardinality(v_cand), 0) > 0 and v_idf_total > 0 then
      -- As of an instant, the words of then of the candidates changed since, once each (read
      -- below for the length and for each term).
      if as_of is not null then
        select coalesce(array_agg(m.id), '{}'), coalesce(array_agg(memory_search.fts_then(m.id, m.content, m.fts, as_of)), '{}')
          into v_then_ids, v_then_fts
          from public.devai_memories m
         where m.id = any (v_cand) and m.updated_at > as_of;
      end if;
      with cand as (
        select distinct c.id from unnest(v_cand) c(id)
      ),
      matched as (
        select m.id, length(w.fts)::double precision as dl,
               (select coalesce(sum(t.idf), 0)
                  from unnest(v_terms_q, v_terms_idf) as t(q, idf)
                 where w.fts @@ t.q) as idf_sum
          from cand c
          cross join lateral (select m.* from public.devai_memories m where m.id = c.id offset 0) m
          -- Its words: as of an instant, those of then (v_then_fts, above).
          cross join lateral (select case when as_of is null or m.updated_at <= as_of then m.fts
                                          else v_then_fts[array_position(v_then_ids, m.id)] end as fts) w
         where m.owner_id = match_owner
           and (as_of is not null or (m.is_valid and m.state = 'active' and m.strength > 0.05))
           and m.source is distinct from 'conversation'
           and (m.namespace || '/') ^@ any (v_scopes)
           and (not v_filtered
                or case when as_of is null
                        then memory_search.passes_filters(m.fts, m.created_at, m.memory_type, m.metadata, m.pinned, m.importance, m.updated_at,
                                                          v_exclude, filter_after, filter_before, filter_memory_types, filter_categories, filter_fields)
                        else memory_search.passes_filters_at(m.id, as_of, v_exclude, filter_after, filter_before, filter_memory_types,
                                                             filter_categories, filter_fields) end)
      ),
      scored as (
        select x.id,
               x.idf_sum * (v_k1 + 1)
                 / (1 + v_k1 * (1 - v_b + v_b * x.dl / greatest((select avg(y.dl) from matched y), 1))) as score
          from matched x
      ),
      ranked as (
        select s.id, s.score, least(1, s.score / (v_idf_total * (v_k1 + 1) / (1 + v_k1))) as coverage
          from scored s
         where s.score > 0
         order by s.score desc, s.id
         limit v_pool
      )
      select coalesce(array_agg(r.id order by r.score desc, r.id), '{}'),
             coalesce(array_agg(r.score order by r.score desc, r.id), '{}'),
             coalesce(array_agg(r.coverage order by r.score desc, r.id), '{}')
        into v_kw_ids, v_kw_score, v_kw_cov
        from ranked r;
    end if;
  end if;

  -- Vector signal: match_memories over the same scopes (exact or HNSW by scope size), the filters
  -- applied while it searches, down to half the threshold (companions of an answer, see below).
  if v_w_vec > 0 then
    select coalesce(array_agg(v.id order by v.similarity desc, v.id), '{}'),
           coalesce(array_agg(v.similarity order by v.similarity desc, v.id), '{}')
      into v_vec_ids, v_vec_sims
      from public.match_memories(
             query_embedding, v_bases[1], v_vec_pool, similarity_threshold / 2, match_owner, match_embedding_model,
             v_bases[2:], as_of, with_relations => false, filter_after => filter_after, filter_before => filter_before,
             filter_memory_types => filter_memory_types, filter_categories => filter_categories,
             filter_exclude => v_exclude, filter_fields => filter_fields) v;
  end if;

  -- Does the query have an answer at all? Only when its best memory reaches a floor: keyword
  -- coverage keyword_threshold, or cosine similarity_threshold. Then memories reaching half those
  -- floors come with it (a multi-part answer's other parts match less of the question).
  v_best_cov := coalesce((select max(c) from unnest(v_kw_cov) c), 0);
  -- The answer to a question of many terms is usually spread over several memories, none
  -- matching most of it: past five terms, the floor is what five of them would need.
  v_min_cov := v_min_cov * least(1, 5.0 / greatest(cardinality(v_terms_all), 1));
  if not ((cardinality(v_kw_ids) > 0 and v_best_cov >= v_min_cov)
          or (cardinality(v_vec_ids) > 0 and v_vec_sims[1] > similarity_threshold)) then
    return;
  end if;
  -- A keyword list whose best match covers little of the query is mostly common words: it counts
  -- less, from nothing at a third of keyword_min_coverage to its full weight at it.
  if search_mode = 'hybrid' and v_conf > 0 then
    v_w_kw := v_w_kw * least(1, greatest(0, (v_best_cov - v_conf / 3) / (v_conf * 2 / 3)));
  end if;

  -- Each memory's share of the keyword and vector lists (1 for a list's first, parallel to the
  -- lists): its reciprocal rank (rrf_k + 1) / (rrf_k + rank), blended with its score as a share of
  -- the list's best by fusion_score_share (fusion_score_share_complex for a complex question: by
  -- rank alone, a memory answering one part of it, that one list ranks 3rd and the other does not
  -- hold, loses to memories both rank 10th-30th; docs/retrieval.md#fusion). Ranks are competition
  -- ranks: memories a signal scores alike get the same share.
  select coalesce(array_agg((1 - v_share) * (v_k + 1) / (v_k + x.rnk) + v_share * x.score / v_kw_score[1]
                            order by x.ord), '{}')
    into v_kw_share
    from (select y.score, y.ord, rank() over (order by y.score desc) as rnk
            from unnest(v_kw_score) with ordinality as y(score, ord)) x;
  select coalesce(array_agg((1 - v_share) * (v_k + 1) / (v_k + x.rnk)
                            + v_share * case when v_vec_sims[1] > 0 then greatest(x.sim, 0) / v_vec_sims[1] else 0 end
                            order by x.ord), '{}')
    into v_vec_share
    from (select y.sim, y.ord, rank() over (order by y.sim desc) as rnk
            from unnest(v_vec_sims) with ordinality as y(sim, ord)) x;

  -- Graph signal: from the best memories that pass on their own, hop over relations.
  if v_w_graph > 0 then
    select coalesce(array_agg(s.id order by s.fused desc, s.id), '{}') into v_seeds
      from (select u.id, sum(u.f) as fused
              from (select k.id, v_w_kw * k.sh as f
                      from unnest(v_kw_ids, v_kw_cov, v_kw_share) as k(id, cov, sh)
                     where k.cov >= v_min_cov / 2
                    union all
                    select v.id, v_w_vec * v.sh
                      from unnest(v_vec_ids, v_vec_share) as v(id, sh)) u
             group by u.id
             order by sum(u.f) desc, u.id
             limit v_seed_count) s;
    -- public.memory_graph_neighbours: bounded BFS over typed edges valid then, inside the scopes,
    -- both directions; entity lookup for who/what questions. Raw episodes only when asked for,
    -- at half weight.
    with reached as (
      select n.id, n.via, n.edge_type as edge, n.weight as w, false as lookup
        from public.memory_graph_neighbours(v_seeds, v_types, greatest(graph_depth, 1), least(v_pool, 500), as_of,
                                            v_bases, 'both') n
       where graph_depth > 0
      union all
      select e.id, e.entity_id, 'entity', e.weight, true
        from public.memory_entity_lookup(entity_terms, least(v_pool, 500), as_of, v_bases, match_owner) e
       where cardinality(coalesce(entity_terms, '{}')) > 0
      union all
      -- One hop through the entities the best hits name (a file, a package, an error code): the
      -- other memories naming them, weighted down by how common the entity is: how many live
      -- facts name it now (memory_entity_links_profile, counted to keyword_df_cap + 1; episodes
      -- and forgotten or superseded memories do not make a file common), as of an instant its
      -- mention_count. Entities named by more than keyword_df_cap say little and are not
      -- followed; a followed one's newest keyword_df_cap live facts (and episodes, when asked
      -- for) are read. An edge of type 'entity': a graph_edge_types list that does not name it
      -- leaves the hop out (why/when questions follow only the edges their answer lives on;
      -- docs/retrieval.md#graph).
      select l2.memory_id, l1.memory_id, 'entity',
             0.5 * l1.confidence * l2.confidence / ln(2 + n.named), false
        from public.memory_entity_links l1
        cross join lateral (
          select case when as_of is null
                      then (select count(*)::integer
                              from (select 1 from public.memory_entity_links x
                                     where x.entity_id = l1.entity_id and x.owner_id = l1.owner_id
                                       and x.profile_kind = 'fact'
                                     limit v_df_cap + 1) c)
                      else (select e.mention_count from public.memory_entities e where e.id = l1.entity_id) end as named
        ) n
        cross join lateral (
          (select x.memory_id, x.confidence from public.memory_entity_links x
            where as_of is null and x.entity_id = l1.entity_id and x.owner_id = l1.owner_id and x.profile_kind = 'fact'
            order by x.profile_at desc, x.memory_id desc
            limit v_df_cap)
          union all
          (select x.memory_id, x.confidence from public.memory_entity_links x
            where as_of is null and graph_episodes
              and x.entity_id = l1.entity_id and x.owner_id = l1.owner_id and x.profile_kind = 'episode'
            order by x.profile_at desc, x.memory_id desc
            limit v_df_cap)
          union all
          select x.memory_id, x.confidence from public.memory_entity_links x
           where as_of is not null and x.entity_id = l1.entity_id
        ) l2
       where graph_depth > 0
         and (graph_edge_types is null or 'entity' = any (graph_edge_types))
         and l1.memory_id = any (v_seeds)
         and n.named <= v_df_cap
         and l2.memory_id <> l1.memory_id
    ),
    best as (
      -- Each memory reached once, by its best way (the highest weight: an episode's halving is
      -- the memory's own, so it does not change which way is best), then read once: a memory that
      -- several best hits name an entity of was looked up for each, twice (its visibility, then
      -- its fields). Visible (in scope, held then; the entity hop's memories are tested here, the
      -- hops' and the lookup's were already) and kept by the filters.
      select r.id, r.via, r.edge,
             r.w * case when m.source = 'conversation' then 0.5 else 1 end as w
        from (select distinct on (r.id) r.id, r.via, r.edge, r.w
                from reached r
               -- A hop back to a best hit adds nothing; a name the question asks about counts for
               -- a best hit too (the lookup is a direct match, not a hop from it).
               where (r.lookup or not (r.id = any (v_seeds)))
               order by r.id, r.w desc, r.via) r
        cross join lateral (select m.* from public.devai_memories m where m.id = r.id offset 0) m
       where public.memory_graph_visible(m.id, m.namespace, m.is_valid, m.state, m.strength, m.created_at, m.valid_until,
                                         as_of, v_scopes)
         and (graph_episodes or m.source is distinct from 'conversation')
         and (as_of is not null or m.strength > 0.05) -- faded: out of every signal
         and (not v_filtered
              or case when as_of is null
                      then memory_search.passes_filters(m.fts, m.created_at, m.memory_type, m.metadata, m.pinned, m.importance, m.updated_at,
                                                        v_exclude, filter_after, filter_before, filter_memory_types, filter_categories, filter_fields)
                      else memory_search.passes_filters_at(m.id, as_of, v_exclude, filter_after, filter_before, filter_memory_types,
                                                           filter_categories, filter_fields) end)
    ),
    top as (
      select b.* from best b order by b.w desc, b.id limit v_pool
    )
    select coalesce(array_agg(t.id order by t.w desc, t.id), '{}'),
           coalesce(array_agg(t.w order by t.w desc, t.id), '{}'),
           coalesce(array_agg(t.via order by t.w desc, t.id), '{}'),
           coalesce(array_agg(t.edge order by t.w desc, t.id), '{}')
      into v_g_ids, v_g_weight, v_g_via, v_g_edge
      from top t;
  end if;

  -- The asked period's own memories: for a when question with a time window (recency counts),
  -- each memory of the window is a candidate by its time alone, ranked by the recency list with
  -- the others. "Which bugs were fixed in the last ten days?" shares few words with the fixes,
  -- and the lexical embedder puts some of them below zero: the keyword and vector lists left out
  -- memories the question's own window holds. The newest v_pool of the window in the scopes,
  -- read newest first from the tenant's (owner_id, created_at) index: at most exact_scan_max_rows
  -- rows (1,000), the bound the vector path reads a window by, and never fewer than v_pool.
  if v_w_recent > 0 and (filter_after is not null or filter_before is not null) and as_of is null then
    select coalesce(array_agg(w.id order by w.created_at desc, w.id desc), '{}') into v_win_ids
      from (select r.id, r.created_at
              from (select m.id, m.created_at, m.namespace, m.is_valid, m.state, m.strength, m.source, m.fts,
                           m.memory_type, m.metadata, m.pinned, m.importance, m.updated_at
                      from public.devai_memories m
                     where m.owner_id = match_owner
                       and (filter_after is null or m.created_at >= filter_after)
                       and (filter_before is null or m.created_at < filter_before)
                     order by m.created_at desc, m.id desc
                     limit greatest(v_pool, coalesce(v_win_rows, 1000))) r
             where r.is_valid and r.state = 'active' and r.strength > 0.05
               and r.source is distinct from 'conversation'
               and (r.namespace || '/') ^@ any (v_scopes)
               and memory_search.passes_filters(r.fts, r.created_at, r.memory_type, r.metadata, r.pinned, r.importance, r.updated_at,
                                                v_exclude, filter_after, filter_before, filter_memory_types, filter_categories, filter_fields)
             order by r.created_at desc, r.id desc
             limit v_pool) w;
  end if;

  -- Fusion: weighted shares of each list (keyword and vector: rank blended with score, above;
  -- graph and recency: reciprocal rank), normalised by what a memory first in every list that
  -- found anything would get (so a query with no keyword hit is not capped by the keyword
  -- weight), times 1.25 for a preferred type (capped at 1). A pinned single-signal mode ranks by
  -- that signal's own score instead.
  -- The related bullets leave out what the question excludes, its every exclusion (the keyword
  -- list reads at most keyword_max_terms of its terms).
  if with_related and as_of is null and query_text ~ '(^|\s)-("|[[:alpha:]][^\s"])' then
    select string_agg(t.query::text, ' | ')::tsquery into v_rel_exclude
      from public.memory_keyword_terms(query_text) t where t.kind = 'exclude';
  end if;

  return query
  with kw as (
    select k.id, (rank() over (order by k.score desc))::integer as rnk, k.score, k.cov, k.sh
      from unnest(v_kw_ids, v_kw_score, v_kw_cov, v_kw_share) as k(id, score, cov, sh)
  ),
  vec as (
    select v.id, (rank() over (order by v.sim desc))::integer as rnk, v.sh
      from unnest(v_vec_ids, v_vec_sims, v_vec_share) as v(id, sim, sh)
  ),
  gr as (
    select g.id, (rank() over (order by g.w desc))::integer as rnk, g.via, g.edge
      from unnest(v_g_ids, v_g_weight, v_g_via, v_g_edge) as g(id, w, via, edge)
  ),
  candidates as (
    select u.id from (select kw.id from kw where kw.cov >= v_min_cov / 2
                      union select vec.id from vec
                      union select gr.id from gr
                      union select w.id from unnest(v_win_ids) as w(id)) u
  ),
  recent as materialized (
    -- Only when recency counts ('when' questions), and once: not a plan per candidate. With a
    -- time window the candidates include the window's own memories (v_win_ids, above).
    select c.id, row_number() over (order by m.created_at desc, c.id)::integer as rnk
      from candidates c
      cross join lateral (select m.created_at from public.devai_memories m where m.id = c.id offset 0) m
     where v_w_recent > 0
  ),
  fused as (
    select c.id, kw.rnk as kw_rnk, kw.score as kw_score, kw.cov as kw_cov, vec.rnk as vec_rnk,
           gr.rnk as g_rnk, gr.via as g_via, gr.edge as g_edge,
           (coalesce(v_w_kw * kw.sh, 0) + coalesce(v_w_vec * vec.sh, 0)
             + coalesce(v_w_graph * (v_k + 1) / (v_k + gr.rnk), 0) + coalesce(v_w_recent * (v_k + 1) / (v_k + rc.rnk), 0))
           / (case when cardinality(v_kw_ids) > 0 then v_w_kw else 0 end
              + case when cardinality(v_vec_ids) > 0 then v_w_vec else 0 end
              + case when cardinality(v_g_ids) > 0 then v_w_graph else 0 end
              + v_w_recent) as rel
      from candidates c
      left join kw on kw.id = c.id
      left join vec on vec.id = c.id
      left join gr on gr.id = c.id
      left join recent rc on rc.id = c.id
  ),
  final as (
    select f.*, m.strength as m_strength, m.created_at as m_created, m.memory_type as m_memory_type,
           m.content as m_content, m.namespace as m_namespace, m.priority as m_priority,
           m.importance as m_importance, m.pinned as m_pinned, m.source as m_source, m.metadata as m_metadata,
           m.session_id as m_session_id, m.access_count as m_access_count,
           m.last_accessed_at as m_last_accessed_at, m.updated_at as m_updated_at,
           m.embedding as m_embedding, m.embedding_model as m_embedding_model,
           -- A single signal keeps its own score (vector: cosine; keyword: coverage): nothing is fused.
           least(1, case search_mode when 'vector' then coalesce(vs.sim, 0)
                                     when 'keyword' then coalesce(f.kw_cov, 0)
                                     else f.rel end
                    * case when m.memory_type = any (coalesce(prefer_memory_types, '{}')) then 1.25 else 1 end) as relv
      from fused f
      -- Each candidate read once, with what the answer shows of it (the answer's rows were read
      -- again by id below; the embedding stays a pointer until a similarity needs it).
      cross join lateral (select m.strength, m.created_at, m.memory_type, m.content, m.namespace, m.priority,
                                 m.importance, m.pinned, m.source, m.metadata, m.session_id, m.access_count,
                                 m.last_accessed_at, m.updated_at, m.embedding, m.embedding_model
                            from public.devai_memories m where m.id = f.id offset 0) m
      left join (select v.id, v.sim from unnest(v_vec_ids, v_vec_sims) as v(id, sim)) vs on vs.id = f.id
  ),
  top as (
    select x.* from final x order by x.relv * x.m_strength desc, x.m_created desc, x.id limit match_count
  ),
  -- The answer's edges to memories the search could see (public.retrieve_for_turn's related
  -- bullets are the best of them): read once, for the boost (max_relation_strength) and the bullets.
  edges as materialized (
    select e.* from memory_search.relation_edges(match_owner, array(select t2.id from top t2), as_of, v_scopes,
                                                 with_related and as_of is null) e
  ),
  -- What the search was asked to keep, the related bullets keep too; a memory of the answer is no
  -- bullet, and a memory related to two of them is a bullet for each.
  related as (
    select coalesce(jsonb_agg(jsonb_build_object('id', x.other, 'anchor_id', x.id, 'content', x.content,
                                                 'strength', x.strength) order by x.strength desc, x.other, x.id), '[]') as bullets
      from (select e.id, e.other, e.content, e.strength
              from edges e
             where with_related and as_of is null
               and not (e.other = any (array(select t2.id from top t2)))
               and (filter_after is null or e.created_at >= filter_after)
               and (filter_before is null or e.created_at < filter_before)
               and (filter_memory_types is null or e.memory_type = any (filter_memory_types))
               and (filter_categories is null
                    or (case when e.memory_type = 'procedural' then 'procedural' else e.metadata ->> 'category' end)
                       = any (filter_categories))
               and (v_rel_exclude is null or not (e.fts @@ v_rel_exclude))
             -- a memory related to two hits as strongly: by its anchor (it was the order the edges
             -- happened to be read in)
             order by e.strength desc, e.other, e.id
             limit 8) x
  )
  select t.id, v.content, v.memory_type, v.namespace, t.m_strength, v.priority, v.importance, v.pinned,
         v.source, v.metadata, t.m_session_id, t.m_access_count, t.m_last_accessed_at, t.m_created, t.m_updated_at,
         rs.strength,
         case when v.memory_type = 'procedural' then 'procedural' else v.metadata ->> 'category' end,
         -- Cosine similarity for every returned memory (the vector list has most of them already).
         coalesce((select v.sim from unnest(v_vec_ids, v_vec_sims) as v(id, sim) where v.id = t.id),
                  case when query_embedding is not null and t.m_embedding is not null
                            and t.m_embedding_model = match_embedding_model
                       then 1 - (t.m_embedding operator(extensions.<=>) query_embedding) end),
         t.kw_rnk, t.kw_score, t.kw_cov, t.vec_rnk, t.g_rnk, t.g_via, t.g_edge, t.relv,
         (select r.bullets from related r)
    from top t
    -- Its fields as the answer shows them: as they were at as_of (public.memory_at), else as they are.
    cross join lateral (select a.content, a.memory_type, a.namespace, a.priority, a.importance, a.pinned, a.source, a.metadata
                          from public.devai_memories r
                         cross join lateral memory_search.memory_at_fields(as_of, r.id, r.created_at, r.valid_until, r.is_valid, r.state,
                                                                           r.superseded_by, r.content, r.namespace, r.memory_type,
                                                                           r.priority, r.source, r.importance, r.pinned, r.metadata) a
                         where r.id = t.id and as_of is not null
                        union all
                        select t.m_content, t.m_memory_type, t.m_namespace, t.m_priority, t.m_importance, t.m_pinned, t.m_source,
                               t.m_metadata
                         where as_of is null) v
    left join (select e.id, max(e.strength) as strength from edges e group by e.id) rs on rs.id = t.id
   order by t.relv * t.m_strength desc, t.m_created desc, t.id;
end;
$$;