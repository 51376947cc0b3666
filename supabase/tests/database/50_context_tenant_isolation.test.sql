-- Living context's RLS from the outside: signed in as tenant A, tenant B's usage counters, usage
-- totals, prefetch cache and context injections cannot be seen, changed, planted or reached
-- through the context functions; A's own calls only ever touch A's rows; anon gets nothing; the
-- prune deletes only old session records. Fixtures are written as the table owner.
begin;
select plan(38);

insert into public.devai_memories (id, owner_id, content, memory_type, namespace, metadata) values
  ('50100000-0000-4000-8000-0000000000a1', '50000000-0000-4000-8000-00000000000a', 'A: src/app.ts keeps sessions in Redis.', 'semantic', 'devai/project/p/notes', '{"category": "decisions", "branch": "feat/x"}'),
  ('50100000-0000-4000-8000-0000000000a2', '50000000-0000-4000-8000-00000000000a', 'A: errors are Result values.', 'semantic', 'devai/project/p/notes', '{"category": "conventions"}'),
  ('50100000-0000-4000-8000-0000000000b1', '50000000-0000-4000-8000-00000000000b', 'B: src/app.ts keeps sessions in Postgres.', 'semantic', 'devai/project/p/notes', '{"category": "decisions", "branch": "feat/x"}'),
  ('50100000-0000-4000-8000-0000000000b2', '50000000-0000-4000-8000-00000000000b', 'B: errors are exceptions.', 'semantic', 'devai/project/p/notes', '{"category": "conventions"}'),
  ('50100000-0000-4000-8000-0000000000b3', '50000000-0000-4000-8000-00000000000b', 'B: errors are values.', 'semantic', 'devai/project/p/notes', '{"category": "conventions"}');
insert into public.memory_entities (id, owner_id, canonical_name, entity_type) values
  ('50200000-0000-4000-8000-0000000000a1', '50000000-0000-4000-8000-00000000000a', 'src/app.ts', 'file'),
  ('50200000-0000-4000-8000-0000000000b1', '50000000-0000-4000-8000-00000000000b', 'src/app.ts', 'file');
insert into public.memory_entity_links (owner_id, memory_id, entity_id, mention) values
  ('50000000-0000-4000-8000-00000000000a', '50100000-0000-4000-8000-0000000000a1', '50200000-0000-4000-8000-0000000000a1', 'src/app.ts'),
  ('50000000-0000-4000-8000-00000000000b', '50100000-0000-4000-8000-0000000000b1', '50200000-0000-4000-8000-0000000000b1', 'src/app.ts');
insert into public.memory_relations (owner_id, from_id, to_id, relation_type, strength) values
  ('50000000-0000-4000-8000-00000000000b', '50100000-0000-4000-8000-0000000000b3', '50100000-0000-4000-8000-0000000000b2', 'contradicts', 0.9);
insert into public.memory_usage (memory_id, owner_id, retrieval_count, citation_count, ignore_count) values
  ('50100000-0000-4000-8000-0000000000b1', '50000000-0000-4000-8000-00000000000b', 4, 1, 3);
insert into public.memory_usage_totals (owner_id, reports, retrieved, cited) values
  ('50000000-0000-4000-8000-00000000000b', 4, 4, 1);
insert into public.context_prefetch (owner_id, session_id, signal_key, memory_ids, refs, confidence) values
  ('50000000-0000-4000-8000-00000000000b', 's-shared', 'file:src/app.ts', array['50100000-0000-4000-8000-0000000000b1'::uuid],
   '[{"id": "50100000-0000-4000-8000-0000000000b1", "kind": "file", "weight": 1}]', 1);
insert into public.context_injections (owner_id, session_id, memory_id, tier, level, tokens) values
  ('50000000-0000-4000-8000-00000000000b', 's-shared', '50100000-0000-4000-8000-0000000000b1', 'critical', 'full', 12);

select tests.authenticate_as('50000000-0000-4000-8000-00000000000a');

-- See: none of B's rows.
select is_empty($$select * from public.memory_usage$$, 'A sees no usage counters (B''s exist)');
select is_empty($$select * from public.memory_usage_totals$$, 'A sees no usage totals (B''s exist)');
select is_empty($$select * from public.context_prefetch$$, 'A sees no prefetch rows (B''s exist, same session id)');
select is_empty($$select * from public.context_injections$$, 'A sees no injection rows (B''s exist)');

-- Change and plant: nothing of B's to update, nothing owned by B can be inserted.
select throws_ok($$update public.memory_usage set ignore_count = 0, retrieval_count = citation_count returning memory_id$$,
  '42501', 'permission denied for table memory_usage', 'A resets no counters, B''s or its own (record_memory_usage writes them: 20261128921000)');
select is_empty($$update public.context_prefetch set confidence = 0 returning session_id$$, 'A changes none of B''s prefetch rows');
select throws_ok($$insert into public.memory_usage (memory_id, owner_id, retrieval_count, citation_count, ignore_count) values ('50100000-0000-4000-8000-0000000000b2', '50000000-0000-4000-8000-00000000000b', 1, 1, 0)$$,
  '42501', 'permission denied for table memory_usage', 'A cannot plant usage for B');
select throws_ok($$insert into public.memory_usage (memory_id, owner_id, retrieval_count, citation_count, ignore_count) values ('50100000-0000-4000-8000-0000000000b2', '50000000-0000-4000-8000-00000000000a', 1, 1, 0)$$,
  '42501', 'permission denied for table memory_usage', 'A cannot count usage of B''s memory under its own name');
select throws_ok($$insert into public.context_prefetch (owner_id, session_id, signal_key, memory_ids, refs, confidence) values ('50000000-0000-4000-8000-00000000000b', 's', 'file:x', '{}', '[]', 0)$$,
  '42501', 'new row violates row-level security policy for table "context_prefetch"', 'A cannot fill B''s prefetch cache');
select throws_ok($$insert into public.context_injections (owner_id, session_id, memory_id, tier, level, tokens) values ('50000000-0000-4000-8000-00000000000a', 's', '50100000-0000-4000-8000-0000000000b1', 'critical', 'full', 1)$$,
  '23503', null, 'A cannot record an injection of B''s memory');
select throws_ok($$delete from public.memory_usage$$, '42501', 'permission denied for table memory_usage', 'a tenant cannot delete usage counters');
select throws_ok($$delete from public.context_prefetch$$, '42501', 'permission denied for table context_prefetch', 'a tenant cannot delete prefetch rows');
select throws_ok($$update public.memory_usage_totals set owner_id = '50000000-0000-4000-8000-00000000000b'$$, '42501', 'permission denied for table memory_usage_totals', 'A cannot hand its totals to B');

-- The context functions as A: B's memories, files, branch notes and contradictions are never reached.
select results_eq(
  $$select id, kind from public.context_candidates(array['devai/project/p'], array['50100000-0000-4000-8000-0000000000b2'::uuid],
      array['src/app.ts'], array['src'], 'feat/x', array['conventions'], null, true) order by id, kind$$,
  $$values ('50100000-0000-4000-8000-0000000000a1'::uuid, 'branch'::text), ('50100000-0000-4000-8000-0000000000a1', 'file'),
           ('50100000-0000-4000-8000-0000000000a2', 'background')$$,
  'context_candidates as A: A''s file, branch and convention memories; B''s given id, file, branch note and contradiction are not there');
select is_empty($$select * from public.context_candidates(array['devai/project/p'], given_ids => array['50100000-0000-4000-8000-0000000000b1'::uuid],
                   match_owner => '50000000-0000-4000-8000-00000000000b')$$,
                'naming B as the owner finds nothing (RLS)');
select is_empty($$select * from public.context_open_contradictions(array['devai/project/p'])$$, 'B''s open contradiction is not A''s');
-- The search's usage feedback and the cited files it reads: B's ids and files are out of A's reach.
select is(public.memory_feedback(array['50100000-0000-4000-8000-0000000000b1'::uuid], array['devai/project/p'],
                                 '50000000-0000-4000-8000-00000000000b'), '[]'::jsonb,
          'memory_feedback as A: naming B''s memory and B as the owner gives nothing (RLS)');
select is_empty($$select * from public.memory_cited_files(array['50100000-0000-4000-8000-0000000000b1'::uuid],
                   '50000000-0000-4000-8000-00000000000b')$$, 'memory_cited_files as A: B''s file links are not read');
select results_eq($$select memory_id, files from public.memory_cited_files(
                     array['50100000-0000-4000-8000-0000000000a1'::uuid, '50100000-0000-4000-8000-0000000000b1'],
                     '50000000-0000-4000-8000-00000000000a')$$,
                  $$values ('50100000-0000-4000-8000-0000000000a1'::uuid, array['src/app.ts'])$$,
                  'A''s own memory''s file, and nothing of B''s given beside it');
select is((select cardinality(ids) from memory_search.context_lookups('50000000-0000-4000-8000-00000000000b', array['devai/project/p/'],
            array['src/app.ts'], array['src'], 'feat/x', array['conventions'], now() - interval '1 day', 30)), 0,
          'the security-definer lookups pin the tenant: naming B as the owner finds nothing');
select results_eq($$select unnest(ids), unnest(kinds) from memory_search.context_lookups('50000000-0000-4000-8000-00000000000a', array['devai/project/p/'],
            array['src/app.ts'], null, 'feat/x', array['conventions'], null, 30) order by 1, 2$$,
          $$values ('50100000-0000-4000-8000-0000000000a1'::uuid, 'branch'::text), ('50100000-0000-4000-8000-0000000000a1', 'file'),
                   ('50100000-0000-4000-8000-0000000000a2', 'background')$$,
          'as A, the lookups return A''s ids only (never content)');
select throws_ok($$select * from public.context_candidates(array[]::text[])$$, '22023', 'at least one namespace scope is required', 'a scope is required');
select throws_ok($$select * from public.context_candidates(array['devai/project/p'], max_per_kind => 0)$$, '22023', null, 'max_per_kind is bounded');

-- A's usage report: B's ids are unknown and untouched; A's own counters, strength and totals move.
select results_eq(
  $$select recorded, cited, unknown, predicted_session from public.record_memory_usage('s-shared',
      array['50100000-0000-4000-8000-0000000000a1'::uuid, '50100000-0000-4000-8000-0000000000b1'],
      array['50100000-0000-4000-8000-0000000000a1'::uuid, '50100000-0000-4000-8000-0000000000b1'], array[10, 20])$$,
  $$values (1, 1, array['50100000-0000-4000-8000-0000000000b1'::uuid], false)$$,
  'A''s report counts A''s memory only; B''s id is unknown; B''s prefetch for the same session id is not A''s prediction');
select results_eq($$select memory_id, retrieval_count, citation_count, ignore_count from public.memory_usage$$,
  $$values ('50100000-0000-4000-8000-0000000000a1'::uuid, 1, 1, 0)$$, 'A now has one counter row');
select results_eq($$select reports, retrieved, cited, injected_tokens, cited_tokens from public.memory_usage_totals$$,
  $$values (1::bigint, 1::bigint, 1::bigint, 10::bigint, 10::bigint)$$, 'A''s totals hold A''s report only');
select throws_ok($$select * from public.record_memory_usage('s', array['50100000-0000-4000-8000-0000000000a1'::uuid], '{}', '{}')$$,
  '22023', 'p_tokens must have one count per retrieved id', 'one token count per retrieved id');

-- A's assembly record: only A's memory is reinforced and recorded.
select lives_ok($$select public.record_context_assembly('s-a', array['50100000-0000-4000-8000-0000000000a2'::uuid, '50100000-0000-4000-8000-0000000000b2'],
                   array['background', 'background'], array['compressed', 'compressed'], array[5, 5],
                   array['50100000-0000-4000-8000-0000000000a2'::uuid, '50100000-0000-4000-8000-0000000000b2'], null, '{"mode": "assemble"}')$$,
                'record_context_assembly runs with one of B''s ids among A''s');
select results_eq($$select memory_id from public.context_injections$$, $$values ('50100000-0000-4000-8000-0000000000a2'::uuid)$$,
                  'only A''s memory is recorded as injected');

-- anon: nothing.
select tests.as_anon();
select throws_ok($$select * from public.memory_usage$$, '42501', 'permission denied for table memory_usage', 'anon cannot read usage');
select throws_ok($$select * from public.context_prefetch$$, '42501', 'permission denied for table context_prefetch', 'anon cannot read the prefetch cache');
select throws_ok($$select * from public.context_candidates(array['devai/project/p'])$$, '42501', null, 'anon cannot call context_candidates');
select throws_ok($$select * from public.record_memory_usage('s', '{}', '{}', '{}')$$, '42501', null, 'anon cannot report usage');
select throws_ok($$select * from memory_search.context_lookups('50000000-0000-4000-8000-00000000000a', array['devai/'], null, null, null, null, null, 30)$$,
                 '42501', null, 'anon cannot call the lookups');

-- As the table owner: B's rows are as they were; the prune deletes old session records only.
select tests.clear_authentication();
select results_eq($$select retrieval_count, citation_count, ignore_count from public.memory_usage where owner_id = '50000000-0000-4000-8000-00000000000b'$$,
  $$values (4, 1, 3)$$, 'B''s counters are unchanged');
select is((select strength from public.devai_memories where id = '50100000-0000-4000-8000-0000000000b1'), 1::double precision, 'B''s memory was not reinforced');
create temporary table ours on commit drop as
  select '50000000-0000-4000-8000-00000000000a'::uuid as owner union all select '50000000-0000-4000-8000-00000000000b';
select memory_private.prune_context_sessions(now() + interval '47 hours');
select results_eq($$select (select count(*) from public.context_prefetch where owner_id in (select owner from ours)),
                           (select count(*) from public.context_injections where owner_id in (select owner from ours))$$,
                  $$values (1::bigint, 2::bigint)$$, 'records younger than context_session_retention_hours stay');
select memory_private.prune_context_sessions(now() + interval '49 hours');
select results_eq($$select (select count(*) from public.context_prefetch where owner_id in (select owner from ours)),
                           (select count(*) from public.context_injections where owner_id in (select owner from ours))$$,
                  $$values (0::bigint, 0::bigint)$$, 'older ones are deleted: B''s prefetch row, B''s and A''s injections');

select * from finish();
rollback;
