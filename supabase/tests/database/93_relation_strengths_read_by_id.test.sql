-- The relation boost (memory_search.relation_strengths) looks the memory at the other end of each
-- of a search's edges up by its id, whatever the statistics say (migration 20261128910100). Its
-- join of the edges to public.devai_memories was planned from the statistics: on tables not analyzed
-- since the tenant grew, memory-retrieve/query on 1,600 memories read every memory of the tenant
-- once per result (114 ms; 14 ms after ANALYZE). Counted here as the rows of public.devai_memories
-- the call fetched, on tables this transaction filled and nobody analyzed.
begin;
select plan(5);

insert into public.devai_memories (id, owner_id, content, memory_type, namespace, metadata, strength, base_strength)
select ('93000000-0000-4000-8000-' || lpad(g::text, 12, '0'))::uuid, '93000000-0000-4000-8000-0000000000aa',
       case when g % 50 = 0 then 'Deploy note ' || g || ': the widget service deploys on Fridays'
            else 'Build note ' || g || ': the gadget tests run nightly' end, 'semantic', 'devai/project/demo',
       '{"category": "conventions"}', 0.5, 0.5
  from generate_series(1, 1600) g;
-- Each memory related to the next: every result has an edge each way.
insert into public.memory_relations (owner_id, from_id, to_id, relation_type, strength)
select '93000000-0000-4000-8000-0000000000aa', ('93000000-0000-4000-8000-' || lpad(g::text, 12, '0'))::uuid,
       ('93000000-0000-4000-8000-' || lpad((g + 1)::text, 12, '0'))::uuid, 'related_to', 0.3 + (g % 5) / 10.0
  from generate_series(1, 1599) g;

create function pg_temp.fetched_now() returns bigint language sql as $$
  select idx_tup_fetch + seq_tup_read from pg_stat_xact_user_tables where relid = 'public.devai_memories'::regclass
$$;
create function pg_temp.ids(p_count integer, p_step integer) returns uuid[] language sql as $$
  select array_agg(('93000000-0000-4000-8000-' || lpad((g * p_step)::text, 12, '0'))::uuid order by g)
    from generate_series(1, p_count) g
$$;
-- How many rows of public.devai_memories the statement fetched.
create function pg_temp.fetched_by(p_sql text) returns bigint language plpgsql as $$
declare
  v_before bigint := pg_temp.fetched_now();
begin
  execute p_sql;
  return pg_temp.fetched_now() - v_before;
end;
$$;
grant execute on function pg_temp.fetched_now(), pg_temp.fetched_by(text), pg_temp.ids(integer, integer) to authenticated;

select tests.authenticate_as('93000000-0000-4000-8000-0000000000aa');

select is((select array_agg(round(r.strength::numeric, 1) order by r.id)
             from memory_search.relation_strengths(auth.uid(), pg_temp.ids(3, 10), null, array['devai/']) r),
          array[0.7, 0.7, 0.7]::numeric[], 'each result''s strongest live edge (memory 10: 0.7 from 9, 0.3 to 11)');

-- 20 results: their 40 edges' other ends, each read once (and an index probe may fetch a row twice).
select cmp_ok(pg_temp.fetched_by($$select count(*) from memory_search.relation_strengths(auth.uid(), pg_temp.ids(20, 70),
                                                                                      null, array['devai/'])$$),
              '<=', 100::bigint,
              'now: the other ends of 20 results'' edges are read by id, not the tenant''s 1,600 memories per result');

select cmp_ok(pg_temp.fetched_by($$select count(*) from memory_search.relation_strengths(auth.uid(), pg_temp.ids(20, 70),
                                                                                      now(), array['devai/'])$$),
              '<=', 100::bigint, 'as of an instant: the same');

-- memory.query, whose relation boost this is: the old boost read the tenant per result (78,606 rows).
-- What remains (7,000-8,600 over runs: the plans on these un-analyzed tables vary) is not the boost:
-- the keyword signal's lookups walk the owner's category index (about 1,300 rows each, four of them)
-- and the category listing reads the category's 1,600 memories. The bound sits well between the two.
select ok((select count(*) from public.query_memories('when does the widget service deploy', null, array['devai/'], 'coder',
                                                      array['conventions'], 5, 0, null, keyword_threshold => 0)) = 5,
          'memory.query answers its 5');
select cmp_ok(pg_temp.fetched_by($$select count(*) from public.query_memories('when does the widget service deploy', null,
                                    array['devai/'], 'coder', array['conventions'], 5, 0, null, keyword_threshold => 0)$$),
              '<', 20000::bigint,
              'memory.query''s relation boost reads its results'' edges'' other ends by id');

select * from finish();
rollback;
