-- A graph hop tests each memory it reaches for visibility with the fields the test reads (id,
-- namespace, is_valid, state, strength, created_at, valid_until: public.memory_graph_visible,
-- migration 20261209200000), never with the memory's whole row: a whole row is built with every
-- field read in full, each neighbour's 512-d embedding (two TOAST chunks) among them. A small
-- tenant's hybrid search with two hops read 656 buffers where the columns alone read 157. Counted
-- here: the blocks of devai_memories' TOAST table this transaction's statistics say were fetched.
begin;
select plan(13);

-- s: the seed, "nightly deploy"; n1..n30: its related_to neighbours, each with an embedding
-- (stored out of line), n1..n10 naming the file deploy.sh as s does; n29 valid until mid-June, n30
-- forgotten (its history starts now: as of any instant it shows as it is).
create function pg_temp.mid(k text) returns uuid language sql as $$
  select ('99f10000-0000-4000-8000-' || lpad(case k when 's' then '0' else substr(k, 2) end, 12, '0'))::uuid
$$;
create function pg_temp.toast_blocks() returns bigint language sql as $$
  select pg_stat_get_xact_blocks_fetched(c.reltoastrelid) from pg_class c where c.oid = 'public.devai_memories'::regclass
$$;
create function pg_temp.toast_read_by(p_sql text) returns bigint language plpgsql as $$
declare
  v_before bigint := pg_temp.toast_blocks();
begin
  execute p_sql;
  return pg_temp.toast_blocks() - v_before;
end;
$$;
grant execute on all functions in schema pg_temp to authenticated;
insert into public.devai_memories (id, owner_id, content, memory_type, namespace, embedding, embedding_model, created_at, valid_from)
select pg_temp.mid(k), '99f10000-0000-4000-8000-00000000000d', case k when 's' then 'the nightly deploy runs deploy.sh' else 'note ' || k end,
       'semantic', 'devai/project/g', tests.embedding(array[1, length(k)]::real[]), 'm', '2026-06-01T00:00Z', '2026-06-01T00:00Z'
  from (select 's' as k union all select 'n' || g from generate_series(1, 30) g) x;
insert into public.memory_relations (owner_id, from_id, to_id, relation_type, strength, created_at, valid_from)
select '99f10000-0000-4000-8000-00000000000d', pg_temp.mid('s'), pg_temp.mid('n' || g), 'related_to', 0.5 + g / 100.0,
       '2026-06-01T00:00Z', '2026-06-01T00:00Z'
  from generate_series(1, 30) g;
insert into public.memory_entities (id, owner_id, canonical_name, entity_type)
values ('99f10000-0000-4000-8000-0000000000e1', '99f10000-0000-4000-8000-00000000000d', 'deploy.sh', 'file');
insert into public.memory_entity_links (owner_id, memory_id, entity_id, mention)
select '99f10000-0000-4000-8000-00000000000d', pg_temp.mid(k), '99f10000-0000-4000-8000-0000000000e1', 'deploy.sh'
  from (select 's' as k union all select 'n' || g from generate_series(1, 10) g) x;
update public.devai_memories set state = 'soft_deleted', purge_at = now() + interval '30 days' where id = pg_temp.mid('n30');
update public.devai_memories set valid_until = '2026-06-15T00:00Z' where id = pg_temp.mid('n29');

select tests.authenticate_as('99f10000-0000-4000-8000-00000000000d');
create temp table hop (id uuid);
grant all on hop to authenticated;
select is(pg_temp.toast_read_by($$insert into hop select n.id from public.memory_graph_neighbours(
            array[pg_temp.mid('s')], null, 2, 50, null, array['devai/project/g'], 'both') n$$),
          0::bigint, 'the hops read no embedding (30 neighbours: 30 whole rows before)');
select is((select count(*) from hop), 29::bigint, 'the live neighbours are reached, the forgotten one is not');
select is(pg_temp.toast_read_by($$select count(*) from public.memory_graph_neighbours(
            array[pg_temp.mid('s')], null, 2, 50, '2026-07-01T00:00Z', array['devai/project/g'], 'both')$$),
          0::bigint, 'as of an instant, the hops read no embedding either');
select is((select count(*) from public.memory_graph_neighbours(array[pg_temp.mid('s')], null, 2, 50, '2026-07-01T00:00Z',
                                                               array['devai/project/g'], 'both')),
          28::bigint, 'as of July, the memories held then: not n29, valid until June, nor the forgotten n30');
select is((select count(*) from public.memory_graph_neighbours(array[pg_temp.mid('s')], null, 2, 50, '2026-06-10T00:00Z',
                                                               array['devai/project/g'], 'both')),
          29::bigint, 'as of June 10th, n29 is held too');
select is((select count(*) from public.memory_graph_neighbours(array[pg_temp.mid('s')], null, 2, 50, '2026-05-01T00:00Z',
                                                               array['devai/project/g'], 'both')),
          0::bigint, 'as of before they were made, none');
select is((select count(*) from public.memory_graph_neighbours(array[pg_temp.mid('s')], null, 2, 50, null,
                                                               array['devai/project/other'], 'both')),
          0::bigint, 'out of scope, none');

select is(pg_temp.toast_read_by($$select count(*) from public.memory_entity_lookup(array['deploy.sh'], 50, null, array['devai/project/g'])$$),
          0::bigint, 'the entity lookup reads no embedding');
select is((select count(*) from public.memory_entity_lookup(array['deploy.sh'], 50, null, array['devai/project/g'])), 11::bigint,
          'the entity lookup finds the 11 memories naming the file');

select is(pg_temp.toast_read_by($$select count(*) from memory_search.relation_strengths(auth.uid(), array[pg_temp.mid('s')],
            '2026-07-01T00:00Z', array['devai/project/g/'])$$),
          0::bigint, 'the relation boost as of an instant reads no embedding');
select is((select r.strength from memory_search.relation_strengths(auth.uid(), array[pg_temp.mid('s')], '2026-07-01T00:00Z',
                                                                   array['devai/project/g/']) r),
          0.78::real, 'its strongest edge then is the one to n28, the strongest held then');

create temp table found (id uuid, graph_rank integer);
grant all on found to authenticated;
select is(pg_temp.toast_read_by($$insert into found select h.id, h.graph_rank from public.hybrid_search('nightly deploy',
            match_namespaces => array['devai/project/g'], graph_depth => 2, match_count => 50) h$$),
          0::bigint, 'a hybrid search without an embedding, with hops and the entity hop, reads no embedding');
select is((select count(*) from found where graph_rank is not null), 29::bigint,
          'its graph signal reaches the 29 live neighbours');
select tests.clear_authentication();

select * from finish();
rollback;
