-- An entity's search terms (index memory_entities_search_terms) are computed in one query, with
-- no summary parsed when there is none (migration 20261206400200, docs/graph.md#entities): the
-- expression called memory_entity_name_grams and memory_entity_scoped_lexemes once per entity
-- written, each a query of its own, and 4,000 entities inserted in one statement spent 0.43-0.52 s
-- computing their terms. The terms themselves are unchanged, so the index built before stays valid.
begin;
select plan(3);

set local track_functions = 'all';
create temp table calls_before as
  select f.funcname::text, f.calls from pg_catalog.pg_stat_xact_user_functions f
   where f.schemaname = 'public' and f.funcname in ('memory_entity_name_grams', 'memory_entity_scoped_lexemes');
insert into public.memory_entities (owner_id, canonical_name, entity_type)
select '99e20000-0000-4000-8000-00000000000a'::uuid, 'src/module_' || g || '/handler.ts', 'file'
  from generate_series(1, 100) g;
select is((select coalesce(sum(f.calls), 0) from pg_catalog.pg_stat_xact_user_functions f
            where f.schemaname = 'public' and f.funcname in ('memory_entity_name_grams', 'memory_entity_scoped_lexemes'))
          - (select coalesce(sum(calls), 0) from calls_before),
          0::numeric, 'writing 100 entities without a summary calls neither helper (200 calls before)');

-- The terms are the rule's: every gram of 1 to 3 characters of the key and the summary's English
-- lexemes, prefixed with the tenant, and the tenant itself (migration 20261128750000's body).
create temp table samples (k text, s text);
insert into samples values ('a', null), ('ab', null), ('abc', ''), ('aaaa', null), ('srcapits', 'The API handler, rewritten twice.'),
  ('müller', 'Owns the «billing» service'), ('reactdom', 'it''s React''s DOM renderer: renders 2x faster'),
  ('x', 'quotes '' and \ backslashes'), (repeat('ab', 100), repeat('word ', 50));
select is((select count(*) from samples
            where public.memory_entity_search_terms('99e20000-0000-4000-8000-00000000000a', k, s)
                  is distinct from
                  public.memory_entity_scoped_lexemes(
                    pg_catalog.to_tsvector('english'::regconfig, coalesce(s, ''))::text, '99e20000-0000-4000-8000-00000000000a:s:')::tsvector
                  || pg_catalog.array_to_tsvector(array['99e20000-0000-4000-8000-00000000000a']
                       || array(select '99e20000-0000-4000-8000-00000000000a:n:' || g
                                  from unnest(public.memory_entity_name_grams(k)) as g))),
          0::bigint, 'the terms are those of the rule, for short, repeated, non-ASCII and quoted names and summaries');

set local enable_seqscan = off;
select is((select count(*) from public.memory_entities e
            where e.owner_id = '99e20000-0000-4000-8000-00000000000a'
              and public.memory_entity_search_terms(e.owner_id, e.normalized_name, e.summary)
                  @@ public.memory_entity_name_query('99e20000-0000-4000-8000-00000000000a', public.memory_entity_key('module_42'))),
          1::bigint, 'and the index finds an entity by a part of its name');

select * from finish();
rollback;
