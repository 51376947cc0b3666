-- As of an instant, the search's readers pass public.memory_at the fields it reads
-- (memory_search.memory_at_fields, migration 20261209700100), never a memory's whole row: a whole
-- row is built with every field read in full, each memory's 512-d embedding (two TOAST chunks)
-- among them. keyword_postings' held test of a term's matches, passes_filters_at and the answer's
-- fields of then read none now; match_memories reads each embedding once, for its distance (it
-- read the nearest ones' again for their fields of then). Counted here: the blocks of
-- devai_memories' TOAST table this transaction's statistics say were fetched.
begin;
select plan(6);

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
-- 12 memories "plum note k", each with an embedding (stored out of line); the 11th written after
-- the instant.
insert into public.devai_memories (id, owner_id, content, memory_type, namespace, embedding, embedding_model, created_at, valid_from)
select ('99e71000-0000-4000-8000-' || lpad(g::text, 12, '0'))::uuid, '99e71000-0000-4000-8000-00000000000d',
       'plum note ' || g, 'semantic', 'devai/project/a', tests.embedding(array[1, g]::real[]), 'm',
       case when g = 11 then now() else '2026-06-01T00:00Z' end, case when g = 11 then now() else '2026-06-01T00:00Z' end
  from generate_series(1, 12) g;
select ok((select pg_relation_size(c.reltoastrelid) from pg_class c where c.oid = 'public.devai_memories'::regclass) > 0,
          'the embeddings are stored out of line');

select tests.authenticate_as('99e71000-0000-4000-8000-00000000000d');
create temp table found (id uuid, content text);
grant all on found to authenticated;
select is(pg_temp.toast_read_by($$insert into found select h.id, h.content
                                    from public.hybrid_search('plum', match_namespaces => array['devai/project/a'],
                                                              search_mode => 'keyword', as_of => '2026-07-01T00:00Z',
                                                              filter_memory_types => array['semantic']) h$$),
          0::bigint, 'a keyword search as of an instant reads no embedding (its held tests, filters and fields of then)');
select is((select count(*) from found), 11::bigint, 'the 11 memories held then');
delete from found;
select cmp_ok(pg_temp.toast_read_by($$insert into found select v.id, v.content
                                        from public.match_memories(tests.embedding(array[1, 3]::real[]), 'devai/project/a', 5, 0.1,
                                                                   '99e71000-0000-4000-8000-00000000000d', 'm',
                                                                   as_of => '2026-07-01T00:00Z', with_relations => false) v$$),
              '<=', 11::bigint,
              'a vector search as of an instant reads each embedding held then once, for its distance (11 TOAST blocks; 16 before: the 5 nearest again)');
select is((select count(*) from found), 5::bigint, 'the 5 nearest held then');
select ok(not exists (select 1 from found where id = '99e71000-0000-4000-8000-000000000011'), 'not the one written after');
select tests.clear_authentication();

select * from finish();
rollback;
