-- An export is read from a copy made by one REPEATABLE READ transaction in chunks (migrations
-- 20261208100000, 20261209500000, docs/operations.md#exports): public.memory_export_begin counts
-- the caller's rows and deletes its earlier copies, public.memory_export_copy copies a chunk of a
-- part after a place and key, public.memory_export_page reads it back a page at a time,
-- public.memory_export_drop deletes it. A copy holds the caller's rows only, is read and deleted
-- by its tenant only, gives every value back exactly and every column but the embedding and
-- tsvectors, and a tenant keeps one copy at most, made by the memory service only. Copies whose
-- server went away are pruned after an hour. Fixtures are written as the table owner.
begin;
select plan(16);

insert into public.devai_memories (id, owner_id, content, memory_type, namespace, strength, created_at)
values ('99a00000-0000-4000-8000-0000000000a1', '99a00000-0000-4000-8000-0000000000aa', 'A''s first fact', 'semantic',
        'devai/global/notes', 0.123456789012345, '2026-01-02 03:04:05.678901+00'),
       ('99a00000-0000-4000-8000-0000000000a2', '99a00000-0000-4000-8000-0000000000aa', 'A''s second fact', 'semantic',
        'devai/global/notes', 1, '2026-01-02 03:04:06+00'),
       ('99a00000-0000-4000-8000-0000000000b1', '99a00000-0000-4000-8000-0000000000bb', 'B''s fact', 'semantic',
        'devai/global/notes', 1, '2026-01-02 03:04:05+00');
insert into public.memory_relations (owner_id, from_id, to_id, relation_type, strength)
values ('99a00000-0000-4000-8000-0000000000aa', '99a00000-0000-4000-8000-0000000000a1',
        '99a00000-0000-4000-8000-0000000000a2', 'related_to', 0.3);

select tests.authenticate_as('99a00000-0000-4000-8000-0000000000aa');
select results_eq(
  $$select memories, relations, history, rows_max, chunk_rows from public.memory_export_begin('99e00000-0000-4000-8000-000000000001')$$,
  $$select 2, 1, (select count(*)::integer from public.memory_history), 500000, 10000$$,
  'A''s export counts its two memories, its relation and its history rows, and says the bounds');
select results_eq(
  $$select copied, last_id from public.memory_export_copy('99e00000-0000-4000-8000-000000000001', 'memories', 0,
                                                          '-infinity', '00000000-0000-0000-0000-000000000000', 1)$$,
  $$values (1, '99a00000-0000-4000-8000-0000000000a1'::uuid)$$, 'a chunk copies its limit, and says its last row');
select results_eq(
  $$select copied, last_id from public.memory_export_copy('99e00000-0000-4000-8000-000000000001', 'memories', 1,
                                                          '2026-01-02 03:04:05.678901+00', '99a00000-0000-4000-8000-0000000000a1', 5)$$,
  $$values (1, '99a00000-0000-4000-8000-0000000000a2'::uuid)$$, 'the next chunk starts after the key it is given');
select results_eq(
  $$select copied from public.memory_export_copy('99e00000-0000-4000-8000-000000000001', 'memories', 2,
                                                  '2026-01-02 03:04:06+00', '99a00000-0000-4000-8000-0000000000a2', 5)$$,
  $$values (0)$$, 'past the last row, nothing');
select public.memory_export_copy('99e00000-0000-4000-8000-000000000001', p, 0, '-infinity', '00000000-0000-0000-0000-000000000000', 500)
  from unnest(array['relations', 'history']) p;
select results_eq(
  $$select (m).id, (m).strength, (m).created_at, (m).content
      from (select jsonb_populate_record(null::public.devai_memories, p.item) as m
              from public.memory_export_page('99e00000-0000-4000-8000-000000000001', 'memories', 0, 500) p) x$$,
  $$select id, strength, created_at, content from public.devai_memories order by created_at, id$$,
  'read back in creation order, every value exactly (a float to its last digit, a timestamp to the microsecond)');
select is((select count(*)::integer from public.memory_export_page('99e00000-0000-4000-8000-000000000001', 'memories', 1, 500)),
  1, 'a page starts after the place it is given');
select results_eq(
  $$select k from public.memory_export_page('99e00000-0000-4000-8000-000000000001', 'memories', 0, 1) p, jsonb_object_keys(p.item) k order by k$$,
  $$select attname::text collate "default" from pg_attribute where attrelid = 'public.devai_memories'::regclass and attnum > 0 and not attisdropped
       and attname not in ('embedding', 'fts', 'fts_scoped') order by 1$$,
  'a memory is copied with every column but its embedding and tsvectors');

select tests.authenticate_as('99a00000-0000-4000-8000-0000000000bb');
select is_empty($$select * from public.memory_export_page('99e00000-0000-4000-8000-000000000001', 'memories', 0, 500)$$,
  'B reads nothing of A''s copy, knowing its id');
select public.memory_export_drop('99e00000-0000-4000-8000-000000000001');
reset role;
select is((select count(*)::integer from memory_private.export_rows where owner_id = '99a00000-0000-4000-8000-0000000000aa'),
  3 + (select count(*)::integer from public.memory_history where owner_id = '99a00000-0000-4000-8000-0000000000aa'),
  'nor deletes it');

select tests.authenticate_as('99a00000-0000-4000-8000-0000000000aa');
select results_eq(
  $$select memories, relations, history from public.memory_export_begin('99e00000-0000-4000-8000-000000000002', '{memories}')$$,
  $$values (2, 0, 0)$$, 'a Markdown export copies the memories only');
select public.memory_export_copy('99e00000-0000-4000-8000-000000000002', 'memories', 0, '-infinity', '00000000-0000-0000-0000-000000000000', 500);
reset role;
select results_eq(
  $$select distinct export_id::text from memory_private.export_rows where owner_id = '99a00000-0000-4000-8000-0000000000aa'$$,
  $$values ('99e00000-0000-4000-8000-000000000002')$$, 'a tenant keeps one copy: its next export replaces it');

select tests.as_data_api('99a00000-0000-4000-8000-0000000000aa');
select throws_ok($$select public.memory_export_begin('99e00000-0000-4000-8000-000000000003')$$, '42501',
  'memory_export_begin is called by the memory service only', 'through the Data API a tenant begins no copy');
select throws_ok($$select public.memory_export_copy('99e00000-0000-4000-8000-000000000003', 'memories', 0, '-infinity',
                                                    '00000000-0000-0000-0000-000000000000', 500)$$, '42501',
  'memory_export_copy is called by the memory service only', 'through the Data API a tenant copies nothing');
reset role;

select tests.as_anon();
select throws_ok($$select public.memory_export_copy('99e00000-0000-4000-8000-000000000003', 'memories', 0, '-infinity',
                                                    '00000000-0000-0000-0000-000000000000', 500)$$, '42501', null,
  'anon copies nothing');
reset role;

update memory_private.export_rows set staged_at = now() - interval '61 minutes'
 where owner_id = '99a00000-0000-4000-8000-0000000000aa';
insert into memory_private.export_rows (owner_id, export_id, part, n, item)
values ('99a00000-0000-4000-8000-0000000000bb', '99e00000-0000-4000-8000-000000000004', 'memories', 1, '{}');
select is(memory_private.prune_export_rows(), 2, 'copies staged more than an hour ago are pruned');
select results_eq($$select export_id::text from memory_private.export_rows
                     where owner_id in ('99a00000-0000-4000-8000-0000000000aa', '99a00000-0000-4000-8000-0000000000bb')$$,
  $$values ('99e00000-0000-4000-8000-000000000004')$$, 'a copy being read stays');

select * from finish();
rollback;
