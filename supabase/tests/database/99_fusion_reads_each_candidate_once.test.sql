-- public.hybrid_search's fusion statement reads each candidate once, and its answer shows the
-- fields of that read (migration 20261209600100, docs/retrieval.md#speed): it read the answer's
-- rows by id a second time. Counted as the rows of public.devai_memories the call fetched: a
-- keyword search whose one term matches 10 memories fetches them in the term's lookup, for BM25
-- and for the fusion (30); the answer's second read made it 40.
begin;
select plan(3);

insert into public.devai_memories (id, owner_id, content, memory_type, namespace, metadata, strength, base_strength,
                                   importance, pinned, access_count, session_id)
select ('99f00000-0000-4000-8000-' || lpad(g::text, 12, '0'))::uuid, '99f00000-0000-4000-8000-0000000000aa',
       case when g <= 10 then 'The zebra crossing note number ' || g else 'Another memory about lamps, number ' || g end,
       case when g % 2 = 0 then 'semantic' else 'procedural' end, 'devai/project/fusion',
       jsonb_build_object('category', 'decisions', 'n', g), 0.3 + g / 100.0, 0.3 + g / 100.0,
       (1 + g % 5)::smallint, g % 3 = 0, g, 'session-' || g
  from generate_series(1, 60) g;
-- As in 77: the reads by index a big table gets, whatever the statistics earlier tests left.
analyze public.devai_memories;
set local enable_seqscan = off;

create function pg_temp.fetched_now() returns bigint language sql as $$
  select idx_tup_fetch + seq_tup_read from pg_stat_xact_user_tables where relid = 'public.devai_memories'::regclass
$$;
create temporary table counted on commit drop as select pg_temp.fetched_now() as before;
create temporary table answer on commit drop as
select h.* from public.hybrid_search('zebra', null, array['devai/project/fusion'], 15, 0.7, null,
                                     '99f00000-0000-4000-8000-0000000000aa', 'keyword', graph_depth => 0) h;

select is((select pg_temp.fetched_now() - c.before from counted c), 30::bigint,
          'a keyword search matching 10 memories fetches 30 rows: its lookup, BM25 and the fusion read each once');
select is((select count(*) from answer), 10::bigint, 'and answers the 10 memories matching its term');
select results_eq(
  $$select a.id, a.content, a.memory_type, a.namespace, a.strength, a.priority, a.importance, a.pinned, a.source,
           a.metadata, a.session_id, a.access_count, a.last_accessed_at, a.created_at, a.updated_at, a.category
      from answer a order by a.id$$,
  $$select m.id, m.content, m.memory_type, m.namespace, m.strength, m.priority, m.importance, m.pinned, m.source,
           m.metadata, m.session_id, m.access_count, m.last_accessed_at, m.created_at, m.updated_at,
           case when m.memory_type = 'procedural' then 'procedural' else m.metadata ->> 'category' end
      from public.devai_memories m
     where m.owner_id = '99f00000-0000-4000-8000-0000000000aa' and m.content like 'The zebra%' order by m.id$$,
  'each answered memory shows its own fields');

select * from finish();
rollback;
