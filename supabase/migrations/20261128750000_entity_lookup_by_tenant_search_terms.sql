-- GET memory/entities?q= found its entities by reading every entity of the tenant: the name's
-- "inside the name" (strpos) and the summary's words (to_tsvector per row) are in no index, so the
-- work grew with the tenant's entity count (0.69 s at 50,000 entities whatever q was).
--
-- Now an entity's search terms are in one GIN expression index, each term prefixed with its
-- tenant (as alias_keys and devai_memories.fts_scoped are), so a lookup reads one tenant's
-- entries of the terms q has, never another tenant's:
--   - '<owner>:n:<gram>' for every substring of 1 to 3 characters of the normalized name: a key of
--     up to 3 characters is one gram, a longer one its trigrams; a name that contains the key has
--     them all (name, prefix and "inside the name" are all containment of the key);
--   - '<owner>:s:<lexeme>' for the summary's English lexemes, with their positions (phrases);
--   - '<owner>' alone, so a query of negations only ("-word") reads one tenant's entries too.
-- The index only finds candidates: how an entity matched is still decided on its own columns.
-- No extension: PGlite (npm start) loads pgvector only (docs/pglite.md), and pg_trgm would not
-- keep the lookup inside the tenant without btree_gin. docs/graph.md#entities.

-- Every substring of 1 to 3 characters of an entity key (public.memory_entity_key).
create or replace function public.memory_entity_name_grams(p_key text)
returns text[]
language sql
immutable
parallel safe
security invoker
set search_path = ''
as $$
  select coalesce(array_agg(distinct pg_catalog.substr(p_key, i, n)), '{}')
    from generate_series(1, 3) as n
   cross join lateral generate_series(1, pg_catalog.char_length(coalesce(p_key, '')) - n + 1) as i
$$;
revoke all on function public.memory_entity_name_grams(text) from public, anon;
grant execute on function public.memory_entity_name_grams(text) to authenticated, service_role;

-- A summary's English tsvector (or a tsquery over it, as text) with every lexeme prefixed:
-- the quoted lexemes of the text form are rewritten in place, so positions, weights and
-- operators stay as they were.
create or replace function public.memory_entity_scoped_lexemes(p_text text, p_prefix text)
returns text
language sql
immutable
parallel safe
security invoker
set search_path = ''
as $$
  select pg_catalog.regexp_replace(p_text, '''((?:[^'']|'''')*)''', '''' || p_prefix || '\1''', 'g')
$$;
revoke all on function public.memory_entity_scoped_lexemes(text, text) from public, anon;
grant execute on function public.memory_entity_scoped_lexemes(text, text) to authenticated, service_role;

-- An entity's search terms: the expression of index memory_entities_search_terms (above).
-- Called by GET memory/entities (_shared/memories/entities.ts) with the same arguments.
create or replace function public.memory_entity_search_terms(p_owner uuid, p_key text, p_summary text)
returns tsvector
language sql
immutable
parallel safe
security invoker
set search_path = ''
as $$
  select public.memory_entity_scoped_lexemes(
           pg_catalog.to_tsvector('english'::regconfig, coalesce(p_summary, ''))::text, p_owner::text || ':s:')::tsvector
         || pg_catalog.array_to_tsvector(array[p_owner::text]
              || array(select p_owner::text || ':n:' || g from unnest(public.memory_entity_name_grams(p_key)) as g))
$$;
revoke all on function public.memory_entity_search_terms(uuid, text, text) from public, anon;
grant execute on function public.memory_entity_search_terms(uuid, text, text) to authenticated, service_role;

-- The name candidates of a key: every gram it has (itself up to 3 characters, else its trigrams),
-- in the caller's tenant; null for an empty key. Called by GET memory/entities.
create or replace function public.memory_entity_name_query(p_owner uuid, p_key text)
returns tsquery
language sql
immutable
parallel safe
security invoker
set search_path = ''
as $$
  select pg_catalog.string_agg('''' || p_owner::text || ':n:' || g || '''', ' & ')::tsquery
    from (select distinct pg_catalog.substr(p_key, i, 3) as g
            from generate_series(1, greatest(pg_catalog.char_length(p_key) - 2, 1)) as i) as grams
   where coalesce(p_key, '') <> ''
$$;
revoke all on function public.memory_entity_name_query(uuid, text) from public, anon;
grant execute on function public.memory_entity_name_query(uuid, text) to authenticated, service_role;

-- The summary candidates of a websearch query: the same query over the tenant's prefixed lexemes,
-- and the tenant's own term; null when the query has no lexeme (stop words only). A key holds no
-- quote (memory_entity_key), a lexeme's quotes stay escaped as tsquery output wrote them.
-- Called by GET memory/entities.
create or replace function public.memory_entity_summary_query(p_owner uuid, p_words tsquery)
returns tsquery
language sql
immutable
parallel safe
security invoker
set search_path = ''
as $$
  select ('''' || p_owner::text || ''' & ('
          || public.memory_entity_scoped_lexemes(p_words::text, p_owner::text || ':s:') || ')')::tsquery
   where pg_catalog.numnode(p_words) > 0
$$;
revoke all on function public.memory_entity_summary_query(uuid, tsquery) from public, anon;
grant execute on function public.memory_entity_summary_query(uuid, tsquery) to authenticated, service_role;

-- An expression index: no stored column, and a mention bump (owner, name and summary unchanged)
-- stays a HOT update. fastupdate off, as for the other lookup indexes: no pending list to scan.
create index memory_entities_search_terms on public.memory_entities
  using gin (public.memory_entity_search_terms(owner_id, normalized_name, summary))
  with (fastupdate = off);

-- The best p_limit of tenant p_owner's entities q matches (of type p_type when given), and how
-- each matched: 'name', 'alias', 'prefix', 'contains' (q's key in the normalized name, or one of
-- its alias keys) or 'summary' (websearch_to_tsquery of q in the summary), best first, then by
-- mentions. One arm per index, each planned as its own index scan and keeping its best p_limit:
-- an entity of the best p_limit overall is among its arm's best p_limit. Security definer because
-- under RLS the planner may not use a non-leakproof operator (@@, &&) as an index condition before
-- the policy's owner check (the lookup was a read of every entity of the tenant); the owner check
-- is memory_search.caller_reads_owner, and every term looked up is the tenant's own. Called by
-- GET memory/entities (_shared/memories/entities.ts), which reads the entities under RLS.
create or replace function memory_search.entity_matches(p_owner uuid, p_q text, p_type text, p_limit integer)
returns table (id uuid, matched text)
language sql
stable
security definer
rows 100
set search_path = ''
as $$
  with k as materialized (
    select public.memory_entity_key(p_q) as key,
           p_owner::text || '|' || public.memory_entity_key(p_q) as lookup,
           public.memory_entity_name_query(p_owner, public.memory_entity_key(p_q)) as names,
           pg_catalog.websearch_to_tsquery('english'::regconfig, p_q) as words,
           public.memory_entity_summary_query(p_owner, pg_catalog.websearch_to_tsquery('english'::regconfig, p_q)) as summaries
     where memory_search.caller_reads_owner(p_owner)
  ),
  found as (
    (select e.id, e.mention_count,
            case when e.normalized_name = k.key then 1 when starts_with(e.normalized_name, k.key) then 3 else 4 end as rank
       from k, public.memory_entities e
      where public.memory_entity_search_terms(e.owner_id, e.normalized_name, e.summary) @@ k.names
        and strpos(e.normalized_name, k.key) > 0 and (p_type is null or e.entity_type = p_type)
      order by 3, 2 desc, 1 limit p_limit)
    union all
    (select e.id, e.mention_count, 2
       from k, public.memory_entities e
      where cardinality(e.alias_keys) > 0 and e.alias_keys && array[k.lookup] and k.key <> ''
        and (p_type is null or e.entity_type = p_type)
      order by 2 desc, 1 limit p_limit)
    union all
    (select e.id, e.mention_count, 5
       from k, public.memory_entities e
      where public.memory_entity_search_terms(e.owner_id, e.normalized_name, e.summary) @@ k.summaries
        and e.summary is not null and (p_type is null or e.entity_type = p_type)
      order by 2 desc, 1 limit p_limit)
  )
  select f.id, (array['name', 'alias', 'prefix', 'contains', 'summary'])[min(f.rank)]
    from found f
   group by f.id
   order by min(f.rank), max(f.mention_count) desc, f.id
   limit p_limit
$$;
revoke all on function memory_search.entity_matches(uuid, text, text, integer) from public, anon;
grant execute on function memory_search.entity_matches(uuid, text, text, integer) to authenticated, service_role;
