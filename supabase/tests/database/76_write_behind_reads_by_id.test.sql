-- The write-behind's batch (public.record_retrievals) and public.reinforce_memories read and lock
-- the memories they reinforce through public.lock_retrieved_memories, each by its id, however big
-- the tenant: under RLS their joins with the tenant's memories could be planned as a scan of all of
-- them (on the 100k bench, 17,804 memories read to lock 200: 36 ms a batch; migration
-- 20261128000000). Counted here as the rows this transaction's scans of the table fetched, for a
-- tenant of 3,000 memories, while reading. (Their UPDATEs, and the reads and writes of the whole
-- batch, are counted in 77_reads_by_id_whatever_the_tenant_sizes.)
begin;
select plan(4);

insert into public.devai_memories (id, owner_id, content, memory_type, namespace)
select ('76000000-0000-4000-8000-' || lpad(g::text, 12, '0'))::uuid, '76000000-0000-4000-8000-0000000000aa',
       'Memory number ' || g || ' of a big tenant', 'semantic', 'devai/project/big/' || (g % 40)
  from generate_series(1, 3000) g;
-- ... among 300 tenants of one memory each: the planner, which cannot know the tenant when it plans
-- under RLS, takes it for an average one (about ten memories) and a scan of it for cheap.
insert into public.devai_memories (owner_id, content, memory_type, namespace)
select ('76000000-0000-4000-8000-' || lpad((100000 + g)::text, 12, '0'))::uuid, 'A small tenant''s memory',
       'semantic', 'devai/project/small'
  from generate_series(1, 300) g;
analyze public.devai_memories;
-- 3,000 memories are few enough to read whole, which the planner may rightly prefer here; in a big
-- table it would not, and this stands in for that. What is left to tell apart is whether the
-- memories are found by their ids or all of the tenant's are read through the owner index.
set local enable_seqscan = off;

create temporary table batch on commit drop as
select jsonb_agg(jsonb_build_object('at', now(), 'ids',
         (select jsonb_agg(('76000000-0000-4000-8000-' || lpad((s * 7 + k)::text, 12, '0'))) from generate_series(1, 5) k),
         'meta', '{}'::jsonb)) as items
  from generate_series(1, 40) s;
create temporary table fetched (label text primary key, n bigint) on commit drop;
create function pg_temp.fetched_now() returns bigint language sql as $$
  select idx_tup_fetch + seq_tup_read from pg_stat_xact_user_tables where relid = 'public.devai_memories'::regclass
$$;
grant select on batch to authenticated;
grant select, insert on fetched to authenticated;
grant execute on function pg_temp.fetched_now() to authenticated;

select tests.authenticate_as('76000000-0000-4000-8000-0000000000aa');
insert into fetched values ('before', pg_temp.fetched_now());
select is((select count(*) from public.lock_retrieved_memories((select items from batch))), 200::bigint,
          'the batch''s 200 memories, each once, locked');
insert into fetched values ('after', pg_temp.fetched_now());
select cmp_ok((select n from fetched where label = 'after') - (select n from fetched where label = 'before'),
              '<', 600::bigint, 'found by their ids, not by reading the tenant''s 3,000');
select is(public.record_retrievals((select items from batch)), 200, 'the batch applies its 200 reinforcements through it');

select is((select count(*) from public.reinforce_memories(
             (select array_agg(('76000000-0000-4000-8000-' || lpad((g * 11)::text, 12, '0'))::uuid) from generate_series(1, 200) g))),
          200::bigint, 'reinforce_memories reinforces its 200 memories, read through it');

select * from finish();
rollback;
