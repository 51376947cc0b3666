-- Retrieval and the usage and context records read the memories they have ids for by those ids,
-- whatever the sizes of the tenants (migration 20261128100000). Under RLS the planner cannot know
-- the tenant when it plans, so it takes it for an average one; among many small tenants a big one's
-- memories then look cheap to read whole, and joins of a search's few ids with public.devai_memories
-- were planned as scans of all of them: a retrieval (public.retrieve_for_turn) read this tenant's
-- 3,000 memories six times, 58 ms, 41 of them for its related bullets. Counted here as the rows
-- the transaction's scans of the table fetched, call by call, for a tenant of 3,000 memories among
-- 300 tenants of one memory each.
begin;
select plan(17);

insert into public.devai_memories (id, owner_id, content, memory_type, namespace, metadata, strength, base_strength)
select ('77000000-0000-4000-8000-' || lpad(g::text, 12, '0'))::uuid, '77000000-0000-4000-8000-0000000000aa',
       'Memory number ' || g || ' of a big tenant', 'semantic', 'devai/project/big/' || (g % 40),
       '{"category": "decisions"}', 0.5, 0.5
  from generate_series(1, 3000) g;
insert into public.devai_memories (owner_id, content, memory_type, namespace)
select ('77000000-0000-4000-8000-' || lpad((100000 + g)::text, 12, '0'))::uuid, 'A small tenant''s memory',
       'semantic', 'devai/project/small'
  from generate_series(1, 300) g;
-- A chain of relations through the big tenant's memories: the graph signal and the related bullets
-- have edges to follow from every hit.
insert into public.memory_relations (owner_id, from_id, to_id, relation_type, strength)
select '77000000-0000-4000-8000-0000000000aa', ('77000000-0000-4000-8000-' || lpad(g::text, 12, '0'))::uuid,
       ('77000000-0000-4000-8000-' || lpad((g + 1)::text, 12, '0'))::uuid, 'related_to', 0.9
  from generate_series(1, 2999) g;
-- And 150 file entities, each named by 20 of its memories: the graph signal's entity hop reaches
-- the other memories naming what a hit names.
insert into public.memory_entities (id, owner_id, canonical_name, normalized_name, entity_type, mention_count)
select ('77000000-0000-4000-8000-' || lpad((200000 + e)::text, 12, '0'))::uuid, '77000000-0000-4000-8000-0000000000aa',
       'src/module_' || e || '.ts', 'src/module_' || e || '.ts', 'file', 20
  from generate_series(0, 149) e;
insert into public.memory_entity_links (owner_id, memory_id, entity_id, mention)
select '77000000-0000-4000-8000-0000000000aa', ('77000000-0000-4000-8000-' || lpad(g::text, 12, '0'))::uuid,
       ('77000000-0000-4000-8000-' || lpad((200000 + g % 150)::text, 12, '0'))::uuid, 'src/module_' || (g % 150) || '.ts'
  from generate_series(1, 3000) g;
analyze public.devai_memories;
analyze public.memory_relations;
-- As in 76: in a big table a scan of the tenant would be read through the owner index, not as part
-- of a scan of the whole table, and this stands in for that.
set local enable_seqscan = off;

create temporary table fetched (label text primary key, n bigint) on commit drop;
create function pg_temp.fetched_now() returns bigint language sql as $$
  select idx_tup_fetch + seq_tup_read from pg_stat_xact_user_tables where relid = 'public.devai_memories'::regclass
$$;
-- How many rows of public.devai_memories the statement fetched.
create function pg_temp.fetched_by(p_label text, p_sql text) returns bigint language plpgsql as $$
declare
  v_before bigint := pg_temp.fetched_now();
begin
  execute p_sql;
  insert into fetched values (p_label, pg_temp.fetched_now() - v_before);
  return pg_temp.fetched_now() - v_before;
end;
$$;
create function pg_temp.ids(p_count integer, p_step integer) returns uuid[] language sql as $$
  select array_agg(('77000000-0000-4000-8000-' || lpad((g * p_step)::text, 12, '0'))::uuid order by g)
    from generate_series(1, p_count) g
$$;
-- A write-behind batch: 40 searches of 5 memories.
create temporary table batch on commit drop as
select jsonb_agg(jsonb_build_object('at', now(), 'ids',
         (select jsonb_agg(('77000000-0000-4000-8000-' || lpad((s * 7 + k)::text, 12, '0'))) from generate_series(1, 5) k),
         'meta', '{}'::jsonb)) as items
  from generate_series(1, 40) s;
grant select on batch to authenticated;
grant select, insert on fetched to authenticated;
grant execute on function pg_temp.fetched_now(), pg_temp.fetched_by(text, text), pg_temp.ids(integer, integer)
  to authenticated;

select tests.authenticate_as('77000000-0000-4000-8000-0000000000aa');

-- Memories a report names are looked up three times (the report's check and the foreign keys of
-- memory_usage and memory_usage_sessions), and the cited ones locked and written once each: about
-- 800 rows for 200, against 3,000 for a read of the tenant, hence the bounds of 1,000 below where
-- something is written. The measured report is another session's: one session's resend counts nothing.

-- A retrieval: the keyword signal (three of the tenant's memories match), two graph hops from them
-- (relations and entities), recency, usage feedback and cited files, related bullets, the delta.
create temporary table turn on commit drop as
select public.retrieve_for_turn('1234 2345 777', null, array['devai/'], 15, 0, null, graph_depth => 2,
                                recency_weight => 1, keyword_threshold => 0, since_revision => 0) as r;
select is(jsonb_array_length((select r -> 'memories' from turn)), 15, 'the retrieval answers: its hits and their graph neighbours');
select ok(jsonb_array_length((select r -> 'related' from turn)) > 0, 'with related bullets over the relations');
select ok(exists (select from public.hybrid_search('1234 2345 777', null, array['devai/'], 50, 0, null, graph_depth => 2,
                                                   keyword_threshold => 0) h where h.graph_edge = 'entity'),
          'and memories the graph reached through the entities its hits name');
select cmp_ok(pg_temp.fetched_by('retrieve_for_turn',
  $$select public.retrieve_for_turn('1234 2345 777', null, array['devai/'], 15, 0, null, graph_depth => 2,
                                    recency_weight => 1, keyword_threshold => 0, since_revision => 0)$$),
  '<', 600::bigint, 'a retrieval reads its memories by their ids, not the tenant''s 3,000');

select cmp_ok(pg_temp.fetched_by('query_memories',
  $$select count(*) from public.query_memories('1234 2345 777', null, array['devai/'], 'coder', array['decisions'],
                                               15, 0, null, graph_depth => 2, keyword_threshold => 0)$$),
  '<', 600::bigint, 'memory.query reads its memories by their ids');

select is((select count(*) from public.context_candidates(array['devai/'], given_ids => pg_temp.ids(200, 11))),
          200::bigint, 'context candidates: the 200 given memories');
-- The 200 memories, and the other end of each one's two edges (the relation boost counts an edge
-- only to a memory the search could see: memory_search.relation_strengths, migration 20261128500000).
select cmp_ok(pg_temp.fetched_by('context_candidates',
  $$select count(*) from public.context_candidates(array['devai/'], given_ids => pg_temp.ids(200, 11))$$),
  '<', 1000::bigint, 'context candidates reads the given memories and their edges'' other ends by their ids');

select is((select recorded from public.record_memory_usage('s-77', pg_temp.ids(200, 13), pg_temp.ids(100, 13),
                                                             array_fill(10, array[200]))),
          200, 'a usage report of 200 memories records them');
select cmp_ok(pg_temp.fetched_by('record_memory_usage',
  $$select public.record_memory_usage('s-77-again', pg_temp.ids(200, 13), pg_temp.ids(100, 13), array_fill(10, array[200]))$$),
  '<', 1000::bigint, 'a usage report finds and reinforces its memories by their ids');
select is((select count(*) from public.devai_memories
            where id = any (pg_temp.ids(100, 13)) and base_strength = strength and strength > 0.5),
          100::bigint, 'and reinforces the 100 cited ones');

select lives_ok($$select public.record_context_assembly('s-77', pg_temp.ids(200, 7), array_fill('background'::text, array[200]),
                                                      array_fill('compressed'::text, array[200]), array_fill(5, array[200]),
                                                      null, null, '{}')$$, 'an assembly record of 200 memories');
select is((select count(*) from public.context_injections where session_id = 's-77'), 200::bigint,
          'records their injections');
select cmp_ok(pg_temp.fetched_by('record_context_assembly',
  $$select public.record_context_assembly('s-77', pg_temp.ids(200, 7), array_fill('background'::text, array[200]),
                                         array_fill('compressed'::text, array[200]), array_fill(5, array[200]),
                                         null, null, '{}')$$),
  '<', 600::bigint, 'an assembly record checks its memories by their ids');

-- The write-behind's batch (200 memories of 40 searches) and reinforce_memories, read, locked and
-- written: each memory by its id (their UPDATEs join rows the planner expects one of).
select is(public.record_retrievals((select items from batch)), 200, 'a write-behind batch applies its 200 reinforcements');
select cmp_ok(pg_temp.fetched_by('record_retrievals', $$select public.record_retrievals((select items from batch))$$),
  '<', 1000::bigint, 'a write-behind batch reads and writes its memories by their ids');
select is((select count(*) from public.reinforce_memories(pg_temp.ids(200, 11))), 200::bigint,
          'reinforce_memories reinforces its 200 memories');
select cmp_ok(pg_temp.fetched_by('reinforce_memories', $$select count(*) from public.reinforce_memories(pg_temp.ids(200, 11))$$),
  '<', 1000::bigint, 'reinforce_memories reads and writes its memories by their ids');

select * from finish();
rollback;
