-- Postgres's text search parser reads a run of letters or digits joined by `_` or `@` (`a_a_a_…`,
-- `@a1@a1…`) in time quadratic in the run's length: at each word it tries a host name or an email
-- address to the run's end, fails, and starts again one word further. A memory of 4,000 such
-- characters took 0.27-0.70 s to derive its words (to_tsvector), an episodes request of 50 of them
-- 15 s (a 503 after the statement timeout, the database's CPU taken meanwhile), and a retrieval
-- message of 20,000 took 7.8 s (0.3 s for prose). Now the parser is given the text with a space
-- after every 128 characters of a run with no blank (public.memory_fts_text): the same words for
-- any text whose runs are shorter (prose, code, paths, URLs of up to 128 characters), and work
-- linear in the text (4,000 such characters: 19-25 ms; 20,000: 78-213 ms).
-- pgTAP 99_text_search_parser_reads_short_runs; docs/retrieval.md.

-- The text the parser is given for a memory's content or a query: a space after every 128
-- characters of a run without an ASCII blank (see above; listed, not the locale's \s, so a
-- memory's words are the same in every database). Identifier lexemes are read from the text as
-- it is (memory_identifier_lexemes: a regular expression, linear, tokens of at most 100 characters).
-- Called by public.memory_content_fts and public.memory_keyword_terms.
-- (plpgsql, as memory_identifier_lexemes: a SQL function with a SET clause is planned again in
-- every statement that calls it, pgTAP 64.)
create or replace function public.memory_fts_text(p_text text)
returns text
language plpgsql
immutable
parallel safe
set search_path = ''
as $$
begin
  return pg_catalog.regexp_replace(p_text, '([^ \t\n\v\f\r]{128})(?=[^ \t\n\v\f\r])', '\1 ', 'g');
end;
$$;
revoke all on function public.memory_fts_text(text) from public, anon;
grant execute on function public.memory_fts_text(text) to authenticated, service_role;

-- A memory's words as the keyword signal reads them: the English lexemes of its content (through
-- memory_fts_text) and its identifier lexemes. The one derivation of devai_memories.fts, used by
-- the content trigger (memory_private.derive_content_columns) and by the as-of readers of a past
-- content (memory_search.fts_then, memory_search.keyword_postings).
create or replace function public.memory_content_fts(p_content text)
returns tsvector
language plpgsql
immutable
parallel safe
set search_path = ''
as $$
begin
  return pg_catalog.to_tsvector('english'::regconfig, public.memory_fts_text(p_content))
         || pg_catalog.array_to_tsvector(public.memory_identifier_lexemes(p_content));
end;
$$;
revoke all on function public.memory_content_fts(text) from public, anon;
grant execute on function public.memory_content_fts(text) to authenticated, service_role;

-- The content trigger (migration 20261123000100 and later): fts through public.memory_content_fts.
CREATE OR REPLACE FUNCTION memory_private.derive_content_columns()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO ''
AS $function$
declare
  v_key text;
begin
  new.content_hash := memory_private.content_hash(new.content);
  new.fts := public.memory_content_fts(new.content);
  v_key := memory_private.keyword_scope_key(new.owner_id, memory_private.keyword_scope(new.namespace));
  new.fts_scoped := array_to_tsvector(array(select v_key || ':' || l from unnest(tsvector_to_array(new.fts)) l));
  return new;
end;
$function$;

-- A memory's words at an instant: its content then, derived as the trigger derives it.
CREATE OR REPLACE FUNCTION memory_search.fts_then(p_id uuid, p_content text, p_fts tsvector, p_at timestamp with time zone)
 RETURNS tsvector
 LANGUAGE plpgsql
 STABLE
 SET search_path TO ''
AS $function$
declare
  v_then text;
begin
  select x.new_content into v_then
    from public.memory_history x
   where x.memory_id = p_id and x.ts <= p_at and x.meta ? 'state'
   order by x.ts desc, x.seq desc nulls last, x.id desc
   limit 1;
  if v_then is null or v_then = p_content then
    return p_fts;
  end if;
  return public.memory_content_fts(v_then);
end;
$function$;

-- Keyword lookups (migration 20261207500100): a past content's words derived as the trigger derives them.
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

-- A query's terms: its phrases, exclusions and words parsed through public.memory_fts_text.
CREATE OR REPLACE FUNCTION public.memory_keyword_terms(query_text text, max_terms integer DEFAULT 12)
 RETURNS TABLE(term text, kind text, query tsquery)
 LANGUAGE plpgsql
 STABLE PARALLEL SAFE
 SET search_path TO ''
 SET client_min_messages TO 'warning'
AS $function$
declare
  -- The longest text a search is given: a retrieval's message (20,000 characters), the quote
  -- closing an exclusion it left open, two newlines and its project_context (4,000)
  -- (exclusions.ts retrievalText). Read whole, so an exclusion at the message's end still excludes.
  v_text   text := left(coalesce(query_text, ''), 24003);
  v_seen   text[] := '{}';
  v_count  integer := 0;
  v_part   text;
  v_q      tsquery;
  v_lex    text;
  v_run    text;
  v_piece  text[];
begin
  -- Exclusions first (they are removed from the text before the rest is read), read as
  -- _shared/search/exclusions.ts reads them (the same two patterns; docs/retrieval.md#exclusions):
  -- once, left to right; a `-` at the start, after a blank (Unicode White_Space, listed: not the
  -- locale's \s) or right after an exclusion's closing quote starts one; `-"a phrase"` (a quote
  -- left open runs to the end) or `-word` (a first character that is no blank and no ASCII but a
  -- letter, then up to the next blank or quote).
  for v_run in select m[2] from regexp_matches(v_text, $re$(^|[\u0009-\u000d\u0020\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000])((?:-"[^"]*")*-(?:"[^"]*(?:"|$)|[^\u0001-\u0040\u005b-\u0060\u007b-\u007f\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000][^\u0009-\u000d\u0020\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"]+))$re$, 'g') as m loop
    for v_piece in select regexp_matches(v_run, $re$-(?:"([^"]*)(?:"|$)|([^\u0001-\u0040\u005b-\u0060\u007b-\u007f\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000][^\u0009-\u000d\u0020\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"]+))$re$, 'g') loop
      if v_piece[1] is not null then
        v_q := phraseto_tsquery('english'::regconfig, public.memory_fts_text(v_piece[1])); term := v_piece[1];
      else
        v_q := plainto_tsquery('english'::regconfig, public.memory_fts_text(v_piece[2])); term := v_piece[2];
      end if;
      if numnode(v_q) > 0 then kind := 'exclude'; query := v_q; return next; end if;
    end loop;
  end loop;
  v_text := regexp_replace(v_text, $re$(^|[\u0009-\u000d\u0020\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000])((?:-"[^"]*")*-(?:"[^"]*(?:"|$)|[^\u0001-\u0040\u005b-\u0060\u007b-\u007f\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000][^\u0009-\u000d\u0020\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"]+))$re$, ' ', 'g');

  -- Phrases.
  for v_part in select m[1] from regexp_matches(v_text, '"([^"]*)"', 'g') as m loop
    exit when v_count >= max_terms;
    v_q := phraseto_tsquery('english'::regconfig, public.memory_fts_text(v_part));
    if numnode(v_q) > 0 and not (v_q::text = any (v_seen)) then
      v_seen := v_seen || v_q::text; v_count := v_count + 1;
      term := v_part; kind := 'phrase'; query := v_q; return next;
    end if;
  end loop;
  v_text := regexp_replace(v_text, '"[^"]*"', ' ', 'g');

  -- Identifiers: exact lexemes (quoted, so their punctuation is not tsquery syntax).
  foreach v_lex in array public.memory_identifier_lexemes(v_text) loop
    exit when v_count >= max_terms;
    v_lex := replace(replace(v_lex, '''', ''), '\', '');
    continue when v_lex = '';
    v_q := ('''' || v_lex || '''')::tsquery;
    if not (v_q::text = any (v_seen)) then
      v_seen := v_seen || v_q::text; v_count := v_count + 1;
      term := v_lex; kind := 'identifier'; query := v_q; return next;
    end if;
  end loop;

  -- Words: the English lexemes, in the order they appear in the query.
  for v_lex in
    select l.lexeme
      from unnest(to_tsvector('english'::regconfig, public.memory_fts_text(v_text))) as l
     order by l.positions[1], l.lexeme
  loop
    exit when v_count >= max_terms;
    v_lex := replace(replace(v_lex, '''', ''), '\', '');
    continue when v_lex = '';
    v_q := ('''' || v_lex || '''')::tsquery;
    if not (v_q::text = any (v_seen)) then
      v_seen := v_seen || v_q::text; v_count := v_count + 1;
      term := v_lex; kind := 'word'; query := v_q; return next;
    end if;
  end loop;
end;
$function$;

