-- hybrid_search's one hop through the entities the best hits name weighs an entity by the live
-- facts that name it (migration 20261203800000, docs/retrieval.md#graph): episodes of a session
-- and forgotten or superseded memories naming the file do not make it "common", so the other
-- fact naming it is still reached; an entity more than keyword_df_cap live facts name is not
-- followed; and a followed entity reads at most keyword_df_cap links of each kind.
begin;
select plan(5);

-- a1, the best hit, and b2 name src/billing.ts; then 60 episodes and 30 memories forgotten since
-- name it too. c1 names src/common.ts, which 30 live facts name.
insert into public.devai_memories (id, owner_id, content, memory_type, namespace, embedding, embedding_model, source, session_id)
select ('99e10000-0000-4000-8000-0000000000' || k)::uuid, '99e00000-0000-4000-8000-00000000000a'::uuid, c, 'semantic'::text,
       'devai/project/ex'::text, tests.embedding(v::real[]), 'm'::text, 'user_stated'::text, null::text
  from (values ('a1', 'The billing worker retries failed charges.', array[1, 0]),
               ('b2', 'Its tests need a fake clock.', array[0, 1]),
               ('c1', 'The billing worker logs each retry.', array[0.9, 0.1]::numeric[])) as x(k, c, v)
union all
select ('99e20000-0000-4000-8000-' || lpad(g::text, 12, '0'))::uuid, '99e00000-0000-4000-8000-00000000000a',
       'turn ' || g || ': look at it again', 'episodic', 'devai/project/ex/episodes', tests.embedding(array[0, 1]::real[]),
       'm', 'conversation', 's'
  from generate_series(1, 60) g
union all
select ('99e30000-0000-4000-8000-' || lpad(g::text, 12, '0'))::uuid, '99e00000-0000-4000-8000-00000000000a',
       'old note ' || g, 'semantic', 'devai/project/ex', tests.embedding(array[0, 1]::real[]), 'm', 'user_stated', null
  from generate_series(1, 30) g
union all
select ('99e40000-0000-4000-8000-' || lpad(g::text, 12, '0'))::uuid, '99e00000-0000-4000-8000-00000000000a',
       'common note ' || g, 'semantic', 'devai/project/ex', tests.embedding(array[0, 1]::real[]), 'm', 'user_stated', null
  from generate_series(1, 30) g;
insert into public.memory_entities (id, owner_id, canonical_name, entity_type, normalized_name, mention_count) values
  ('99e50000-0000-4000-8000-000000000001', '99e00000-0000-4000-8000-00000000000a', 'src/billing.ts', 'file', 'src/billing.ts', 92),
  ('99e50000-0000-4000-8000-000000000002', '99e00000-0000-4000-8000-00000000000a', 'src/common.ts', 'file', 'src/common.ts', 31);
insert into public.memory_entity_links (owner_id, memory_id, entity_id, mention)
select m.owner_id, m.id, '99e50000-0000-4000-8000-000000000001'::uuid, 'src/billing.ts'::text
  from public.devai_memories m
 where m.owner_id = '99e00000-0000-4000-8000-00000000000a' and m.id::text !~ '^99e4|c1$'
union all
select m.owner_id, m.id, '99e50000-0000-4000-8000-000000000002', 'src/common.ts'
  from public.devai_memories m
 where m.owner_id = '99e00000-0000-4000-8000-00000000000a' and m.id::text ~ '^99e4|c1$';
-- forgotten after they were linked, as POST memory/{id}/forget does
update public.devai_memories set state = 'soft_deleted', purge_at = now() + interval '30 days'
 where id::text like '99e30000-%';

-- The entity hops of a search: each memory reached with the edge that reached it.
create function pg_temp.hops(episodes boolean default false) returns text[]
language sql as $$
  select coalesce(array_agg(h.id::text order by h.id), '{}')
    from public.hybrid_search('billing worker retries', tests.embedding(array[1, 0]::real[]), array['devai/project/ex'],
                              100, 0.9, 'm', graph_edge_types => array['entity'], graph_episodes => episodes) h
   where h.graph_edge = 'entity'
$$;

select tests.authenticate_as('99e00000-0000-4000-8000-00000000000a');
select ok('99e10000-0000-4000-8000-0000000000b2' = any (pg_temp.hops()),
          'the other live fact naming the file is reached though 60 episodes and 30 forgotten memories name it too');
select ok(not exists (select 1 from unnest(pg_temp.hops()) h where h like '99e4%'),
          'an entity 30 live facts name (more than keyword_df_cap) is not followed');
select ok(not exists (select 1 from unnest(pg_temp.hops()) h where h like '99e2%' or h like '99e3%'),
          'no episode without graph_episodes, no forgotten memory');
select is((select count(*)::integer from unnest(pg_temp.hops(true)) h where h like '99e2%'),
          (select value::integer from public.memory_settings where name = 'keyword_df_cap'),
          'with episodes: the newest keyword_df_cap of the 60 episodes, not all of them');
select tests.clear_authentication();

-- The fixture holds what the count leaves out: the episodes' links are on the profile index as
-- episodes (the forgotten memories' are off it), so the first assertion is about them.
select tests.authenticate_as('99e00000-0000-4000-8000-00000000000a');
select ok(exists (select 1 from public.memory_entity_links l join public.devai_memories m on m.id = l.memory_id
                   where l.entity_id = '99e50000-0000-4000-8000-000000000001' and l.profile_kind = 'episode'),
          'fixture: the episodes are on the profile index as episodes');
select tests.clear_authentication();

select * from finish();
rollback;
