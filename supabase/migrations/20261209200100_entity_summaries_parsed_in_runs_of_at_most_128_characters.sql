-- An entity's summary (model-written, up to 2,000 characters) was given to Postgres's text search
-- parser as it was: a run of letters or digits joined by `_` or `@` costs the parser time quadratic
-- in its length (migration 20261208600000: 4,000 such characters, 0.27-0.70 s), and the summary's
-- lexemes are computed at every write of the entity (the index memory_entities_search_terms) and at
-- the recheck of a lookup. Now a summary goes through public.memory_fts_text, as a memory's content
-- and a query's terms do: a space after every 128 characters of a run without a blank. The words of
-- a summary whose runs are shorter are the same; a lookup's words (memory_search.entity_matches)
-- are cut the same way, so a long run still finds its summary. The index holds the terms of the
-- old derivation: it is built again, once, when some summary has such a run (none has otherwise).
-- pgTAP 99_text_search_parser_reads_short_runs; docs/graph.md#entities.

CREATE OR REPLACE FUNCTION public.memory_entity_search_terms(p_owner uuid, p_key text, p_summary text) RETURNS tsvector
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO ''
    AS $$
  select case when p_summary is null then ''::tsvector
              else public.memory_entity_scoped_lexemes(
                     pg_catalog.to_tsvector('english'::regconfig, public.memory_fts_text(p_summary))::text, p_owner::text || ':s:')::tsvector
         end
         || pg_catalog.array_to_tsvector(array[p_owner::text]
              || array(select p_owner::text || ':n:' || pg_catalog.substr(p_key, i, n)
                         from pg_catalog.generate_series(1, 3) as n
                        cross join lateral pg_catalog.generate_series(1, pg_catalog.char_length(coalesce(p_key, '')) - n + 1) as i))
$$;


CREATE OR REPLACE FUNCTION memory_search.entity_matches(p_owner uuid, p_q text, p_type text, p_limit integer) RETURNS TABLE(id uuid, matched text)
    LANGUAGE sql STABLE SECURITY DEFINER ROWS 100
    SET search_path TO ''
    AS $$
  with k as materialized (
    select public.memory_entity_key(p_q) as key,
           p_owner::text || '|' || public.memory_entity_key(p_q) as lookup,
           public.memory_entity_name_query(p_owner, public.memory_entity_key(p_q)) as names,
           pg_catalog.websearch_to_tsquery('english'::regconfig, public.memory_fts_text(p_q)) as words,
           public.memory_entity_summary_query(p_owner, pg_catalog.websearch_to_tsquery('english'::regconfig, public.memory_fts_text(p_q))) as summaries
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


-- The index's entries were made by the old derivation: they differ only for a summary with a run
-- of more than 128 characters without a blank.
do $$
begin
  if exists (select 1 from public.memory_entities e where e.summary ~ '[^ \t\n\v\f\r]{129}') then
    reindex index public.memory_entities_search_terms;
  end if;
end;
$$;
