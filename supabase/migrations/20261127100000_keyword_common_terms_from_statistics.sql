-- A keyword term matching more than keyword_df_cap of a scope's memories is common: it brings no
-- candidates and its idf is that of cap + 1. Learning that cost a GIN bitmap of all its matches: on
-- the bench's 100k corpus the biggest tenant's ten-term question spent 2.7 ms in
-- memory_search.keyword_postings (of 6.8 ms in hybrid_search), most of it on the few words that
-- hold hundreds or thousands of its memories ('user' in 4,362 of one scope: a 0.8 ms bitmap to
-- count to 26). Postgres's statistics already know those words: ANALYZE keeps, for a tsvector
-- index expression, its most common elements and their frequencies over the rows the (partial)
-- index holds. So:
--
-- * the keyword index is on pg_catalog.strip(fts_scoped) (the same lexemes: fts_scoped has no
--   positions), an expression, so ANALYZE gathers per-"key:lexeme" frequencies over exactly the
--   valid, active, non-episode memories the lookups count;
-- * memory_private.refresh_keyword_common_terms() copies the elements estimated (frequency x the
--   memories the index holds, counted) in at least keyword_common_estimate_factor x keyword_df_cap
--   memories (4 x 25 = 100: well clear of the cap, whatever the sampling error) into
--   memory_private.keyword_common_terms; reading
--   pg_stats itself costs 0.4 ms a search, the table 0.02. pg_cron runs it every 15 minutes
--   (devai-keyword-statistics), after ANALYZE and autovacuum move the statistics;
-- * keyword_postings takes a single-lexeme term found there for any of the caller's scope keys as
--   counted past the cap, without the lookup. Only when every scope asked is a whole keyed scope
--   or above them: a request for devai/project/p/backend is counted, the statistics are for
--   devai/project/p.
--
-- Same answers when the statistics are right (the figure they replace is "more than the cap");
-- a stale entry (a scope that lost most of a word's memories since the last ANALYZE) makes that
-- word count as common until the next one. Measured on the bench's 100k corpus, as postgres,
-- 200 calls of four task_forge questions: keyword_postings 2.74 -> 0.5-0.8 ms; every one of the
-- 1,000 cached terms held at least 73 memories.
--
-- Applying it rebuilds the keyword index in the migration's transaction, and dropping the old one
-- locks devai_memories until that transaction ends: reads and writes wait for the build (0.9 s at
-- the bench's 100k memories) and one ANALYZE (a sample of 30,000 rows whatever the table's size:
-- 0.6 s).

insert into public.memory_settings (name, value, description) values
  ('keyword_common_estimate_factor', 4,
   'hybrid_search: a keyword term the statistics estimate in at least this many times keyword_df_cap of a scope''s memories is common without being counted (0: always counted). docs/retrieval.md#keyword.')
on conflict (name) do nothing;
alter table public.memory_settings add constraint memory_settings_keyword_common_estimate_factor_range check (
  name <> 'keyword_common_estimate_factor' or (value >= 0 and value <= 1000));

drop index public.devai_memories_fts_scoped;
create index devai_memories_fts_scoped on public.devai_memories using gin (pg_catalog.strip(fts_scoped))
  with (fastupdate = off)
  where is_valid and state = 'active' and source is distinct from 'conversation';

create table memory_private.keyword_common_terms (
  term           text primary key,
  estimated_rows integer not null
);
comment on table memory_private.keyword_common_terms is
  'Keyword terms ("<scope key>:<lexeme>") the statistics of devai_memories_fts_scoped estimate in at least keyword_common_estimate_factor x keyword_df_cap memories; refreshed by memory_private.refresh_keyword_common_terms(). docs/retrieval.md#keyword.';
alter table memory_private.keyword_common_terms enable row level security;
revoke all on table memory_private.keyword_common_terms from public, anon, authenticated;
grant select on table memory_private.keyword_common_terms to service_role;
create policy "Service role can read the common keyword terms" on memory_private.keyword_common_terms
  for select to service_role using (true);

create or replace function memory_private.refresh_keyword_common_terms()
returns jsonb
language plpgsql
security definer
set search_path = ''
as $$
declare
  v_min     double precision;
  v_rows    double precision;
  v_added   integer;
  v_removed integer;
  v_changed integer;
begin
  v_min := public.memory_setting('keyword_common_estimate_factor') * public.memory_setting('keyword_df_cap');
  -- The memories the index holds, which the frequencies are shares of: counted (not when the
  -- factor is 0: the table is emptied), because the index's pg_class.reltuples is the whole
  -- table's after a VACUUM (a GIN index reports the heap's live rows, partial or not).
  if v_min > 0 then
    select count(*) into v_rows
      from public.devai_memories m
     where m.is_valid and m.state = 'active' and m.source is distinct from 'conversation';
  end if;
  with estimated as (
    select e.term, (e.freq * v_rows)::integer as estimated_rows
      from pg_catalog.pg_stats s
     cross join lateral unnest(s.most_common_elems::text::text[], s.most_common_elem_freqs) as e(term, freq)
     where s.schemaname = 'public' and s.tablename = 'devai_memories_fts_scoped'
       and v_min > 0 and v_rows > 0
       and e.term is not null and e.freq * v_rows >= v_min
  ),
  removed as (
    delete from memory_private.keyword_common_terms t
     where not exists (select from estimated e where e.term = t.term)
    returning 1
  ),
  upserted as (
    insert into memory_private.keyword_common_terms as t (term, estimated_rows)
    select e.term, e.estimated_rows from estimated e
    on conflict (term) do update set estimated_rows = excluded.estimated_rows
     where t.estimated_rows is distinct from excluded.estimated_rows
    returning (xmax = 0) as added
  )
  select (select count(*) from removed), count(*) filter (where u.added), count(*) filter (where not u.added)
    into v_removed, v_added, v_changed
    from upserted u;
  return jsonb_build_object('terms', (select count(*) from memory_private.keyword_common_terms),
                            'added', v_added, 'removed', v_removed, 'changed', v_changed);
end;
$$;
revoke all on function memory_private.refresh_keyword_common_terms() from public, anon, authenticated;
grant execute on function memory_private.refresh_keyword_common_terms() to service_role;
comment on function memory_private.refresh_keyword_common_terms() is
  'Copies the keyword terms the statistics estimate as common (keyword_common_estimate_factor x keyword_df_cap memories of a scope) into memory_private.keyword_common_terms; pg_cron every 15 minutes (devai-keyword-statistics).';

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
  v_above  boolean;
  v_whole  boolean;
  v_factor numeric;
  v_lexemes text[];
  v_common text[] := '{}';
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
             where pg_catalog.strip(m.fts_scoped) @@ v_sq
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
$function$

;


insert into public.memory_maintenance_schedules (job_name, schedule, command, description) values
  ('devai-keyword-statistics', '*/15 * * * *', 'select memory_private.refresh_keyword_common_terms()',
   'Copies the keyword terms the statistics estimate as common in a scope into memory_private.keyword_common_terms (keyword searches skip counting them), every 15 minutes.')
on conflict (job_name) do update
  set schedule = excluded.schedule, command = excluded.command, description = excluded.description;

select memory_private.register_maintenance_schedules();

-- Statistics for the new index expression now, and the terms they make common.
analyze public.devai_memories;
select memory_private.refresh_keyword_common_terms();
