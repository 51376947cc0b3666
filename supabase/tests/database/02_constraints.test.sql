-- Bad rows are rejected by the database itself, whoever writes them (edge function, worker,
-- Studio): every CHECK on devai_memories and memory_relations, and the composite foreign keys
-- that keep supersession and graph edges inside one tenant.
begin;
select plan(43);

select lives_ok($$insert into public.devai_memories (owner_id, content, memory_type, namespace) values ('20000000-0000-4000-8000-00000000000a', 'prefers tabs', 'semantic', 'devai/global')$$, 'a well-formed memory is accepted (the rows below differ from it in one column)');
select throws_ok($$insert into public.devai_memories (owner_id, content, memory_type, namespace) values ('20000000-0000-4000-8000-00000000000a', 'prefers tabs', 'fact', 'devai/global')$$, '23514',
  'new row for relation "devai_memories" violates check constraint "devai_memories_memory_type_check"',
  'memory_type outside semantic/episodic/procedural is rejected');
select throws_ok($$insert into public.devai_memories (owner_id, content, memory_type, namespace, priority) values ('20000000-0000-4000-8000-00000000000a', 'prefers tabs', 'semantic', 'devai/global', 'urgent')$$, '23514',
  'new row for relation "devai_memories" violates check constraint "devai_memories_priority_check"',
  'priority outside highest/high/medium/low is rejected');
select throws_ok($$insert into public.devai_memories (owner_id, content, memory_type, namespace, source) values ('20000000-0000-4000-8000-00000000000a', 'prefers tabs', 'semantic', 'devai/global', 'rumour')$$, '23514',
  'new row for relation "devai_memories" violates check constraint "devai_memories_source_check"',
  'unknown source is rejected');
select throws_ok($$insert into public.devai_memories (owner_id, content, memory_type, namespace, state) values ('20000000-0000-4000-8000-00000000000a', 'prefers tabs', 'semantic', 'devai/global', 'archived')$$, '23514',
  'new row for relation "devai_memories" violates check constraint "devai_memories_state_check"',
  'state outside active/soft_deleted is rejected');
select throws_ok($$insert into public.devai_memories (owner_id, content, memory_type, namespace, purge_at) values ('20000000-0000-4000-8000-00000000000a', 'prefers tabs', 'semantic', 'devai/global', now())$$, '23514',
  'new row for relation "devai_memories" violates check constraint "devai_memories_purge_at_only_when_soft_deleted"',
  'purge_at on an active memory is rejected');
select throws_ok($$insert into public.devai_memories (owner_id, content, memory_type, namespace, state) values ('20000000-0000-4000-8000-00000000000a', 'prefers tabs', 'semantic', 'devai/global', 'soft_deleted')$$, '23514',
  'new row for relation "devai_memories" violates check constraint "devai_memories_purge_at_only_when_soft_deleted"',
  'a soft-deleted memory without purge_at is rejected');
select throws_ok($$insert into public.devai_memories (owner_id, content, memory_type, namespace, strength) values ('20000000-0000-4000-8000-00000000000a', 'prefers tabs', 'semantic', 'devai/global', 1.01)$$, '23514',
  'new row for relation "devai_memories" violates check constraint "devai_memories_strength_range"',
  'strength above 1 is rejected');
select throws_ok($$insert into public.devai_memories (owner_id, content, memory_type, namespace, strength) values ('20000000-0000-4000-8000-00000000000a', 'prefers tabs', 'semantic', 'devai/global', -0.01)$$, '23514',
  'new row for relation "devai_memories" violates check constraint "devai_memories_strength_range"',
  'negative strength is rejected');
select throws_ok($$insert into public.devai_memories (owner_id, content, memory_type, namespace, importance) values ('20000000-0000-4000-8000-00000000000a', 'prefers tabs', 'semantic', 'devai/global', 0)$$, '23514',
  'new row for relation "devai_memories" violates check constraint "devai_memories_importance_range"',
  'importance 0 is rejected');
select throws_ok($$insert into public.devai_memories (owner_id, content, memory_type, namespace, importance) values ('20000000-0000-4000-8000-00000000000a', 'prefers tabs', 'semantic', 'devai/global', 6)$$, '23514',
  'new row for relation "devai_memories" violates check constraint "devai_memories_importance_range"',
  'importance 6 is rejected');
select throws_ok($$insert into public.devai_memories (owner_id, content, memory_type, namespace) values ('20000000-0000-4000-8000-00000000000a', '   ', 'semantic', 'devai/global')$$, '23514',
  'new row for relation "devai_memories" violates check constraint "devai_memories_content_length"',
  'blank content is rejected');
select throws_ok($$insert into public.devai_memories (owner_id, content, memory_type, namespace) values ('20000000-0000-4000-8000-00000000000a', 'prefers tabs', 'semantic', '')$$, '23514',
  'new row for relation "devai_memories" violates check constraint "devai_memories_namespace_shape"',
  'namespace with an empty namespace is rejected');
select throws_ok($$insert into public.devai_memories (owner_id, content, memory_type, namespace) values ('20000000-0000-4000-8000-00000000000a', 'prefers tabs', 'semantic', 'devai//global')$$, '23514',
  'new row for relation "devai_memories" violates check constraint "devai_memories_namespace_shape"',
  'namespace with an empty namespace segment is rejected');
select throws_ok($$insert into public.devai_memories (owner_id, content, memory_type, namespace) values ('20000000-0000-4000-8000-00000000000a', 'prefers tabs', 'semantic', '/devai/global')$$, '23514',
  'new row for relation "devai_memories" violates check constraint "devai_memories_namespace_shape"',
  'namespace with a leading slash is rejected');
select throws_ok($$insert into public.devai_memories (owner_id, content, memory_type, namespace) values ('20000000-0000-4000-8000-00000000000a', 'prefers tabs', 'semantic', 'devai/global/')$$, '23514',
  'new row for relation "devai_memories" violates check constraint "devai_memories_namespace_shape"',
  'namespace with a trailing slash is rejected');
select throws_ok($$insert into public.devai_memories (owner_id, content, memory_type, namespace) values ('20000000-0000-4000-8000-00000000000a', 'prefers tabs', 'semantic', 'devai/project/../user')$$, '23514',
  'new row for relation "devai_memories" violates check constraint "devai_memories_namespace_shape"',
  'namespace with a ''..'' segment is rejected');
select throws_ok($$insert into public.devai_memories (owner_id, content, memory_type, namespace) values ('20000000-0000-4000-8000-00000000000a', 'prefers tabs', 'semantic', '..')$$, '23514',
  'new row for relation "devai_memories" violates check constraint "devai_memories_namespace_shape"',
  'namespace with a namespace that is only ''..'' is rejected');
select throws_ok($$insert into public.devai_memories (owner_id, content, memory_type, namespace) values ('20000000-0000-4000-8000-00000000000a', 'prefers tabs', 'semantic', 'devai/./global')$$, '23514',
  'new row for relation "devai_memories" violates check constraint "devai_memories_namespace_shape"',
  'namespace with a ''.'' segment is rejected');
select throws_ok($$insert into public.devai_memories (owner_id, content, memory_type, namespace) values ('20000000-0000-4000-8000-00000000000a', 'prefers tabs', 'semantic', 'devai/project/x' || chr(10) || 'y')$$, '23514',
  'new row for relation "devai_memories" violates check constraint "devai_memories_namespace_shape"',
  'namespace with a newline is rejected');
select throws_ok($$insert into public.devai_memories (owner_id, content, memory_type, namespace) values ('20000000-0000-4000-8000-00000000000a', 'prefers tabs', 'semantic', 'devai/project/x' || chr(9))$$, '23514',
  'new row for relation "devai_memories" violates check constraint "devai_memories_namespace_shape"',
  'namespace with a tab is rejected');
select throws_ok($$insert into public.devai_memories (owner_id, content, memory_type, namespace) values ('20000000-0000-4000-8000-00000000000a', 'prefers tabs', 'semantic', repeat('a', 257))$$, '23514',
  'new row for relation "devai_memories" violates check constraint "devai_memories_namespace_shape"',
  'namespace with more than 256 characters is rejected');
select lives_ok($$insert into public.devai_memories (owner_id, content, memory_type, namespace) values ('20000000-0000-4000-8000-00000000000a', 'prefers tabs', 'semantic', 'devai/project/v1..2/x.y')$$, 'dots inside a segment are fine');
select throws_ok($$insert into public.devai_memories (owner_id, content, memory_type, namespace, embedding) values ('20000000-0000-4000-8000-00000000000a', 'prefers tabs', 'semantic', 'devai/global', tests.embedding('{1}'))$$, '23514',
  'new row for relation "devai_memories" violates check constraint "devai_memories_embedding_has_model"',
  'an embedding without embedding_model is rejected');
select throws_ok($$insert into public.devai_memories (owner_id, content, memory_type, namespace, metadata) values ('20000000-0000-4000-8000-00000000000a', 'prefers tabs', 'semantic', 'devai/global', '[]'::jsonb)$$, '23514',
  'new row for relation "devai_memories" violates check constraint "devai_memories_metadata_is_object"',
  'metadata that is an array is rejected');
select throws_ok($$insert into public.devai_memories (owner_id, content, memory_type, namespace, metadata) values ('20000000-0000-4000-8000-00000000000a', 'prefers tabs', 'semantic', 'devai/global', '"x"'::jsonb)$$, '23514',
  'new row for relation "devai_memories" violates check constraint "devai_memories_metadata_is_object"',
  'metadata that is a string is rejected');

-- Fixtures: two memories of tenant A, one of tenant B.
insert into public.devai_memories (id, owner_id, content, memory_type, namespace) values
  ('21000000-0000-4000-8000-000000000001', '20000000-0000-4000-8000-00000000000a', 'uses pnpm', 'semantic', 'devai/global'),
  ('21000000-0000-4000-8000-000000000002', '20000000-0000-4000-8000-00000000000a', 'uses npm', 'semantic', 'devai/global'),
  ('21000000-0000-4000-8000-0000000000b1', '20000000-0000-4000-8000-00000000000b', 'uses yarn', 'semantic', 'devai/global');

select throws_ok($$update public.devai_memories set superseded_by = id where id = '21000000-0000-4000-8000-000000000001'$$,
  '23514', 'new row for relation "devai_memories" violates check constraint "devai_memories_not_superseded_by_itself"',
  'a memory cannot supersede itself');
select throws_ok($$update public.devai_memories set superseded_by = '21000000-0000-4000-8000-0000000000b1'
                    where id = '21000000-0000-4000-8000-000000000001'$$,
  '23503', null, 'a memory cannot be superseded by another tenant''s memory (composite foreign key)');

-- Relations.
select throws_ok($$insert into public.memory_relations (owner_id, from_id, to_id, strength)
                   values ('20000000-0000-4000-8000-00000000000a', '21000000-0000-4000-8000-000000000001', '21000000-0000-4000-8000-000000000001', 0.9)$$,
  '23514', 'new row for relation "memory_relations" violates check constraint "memory_relations_no_self_edge"',
  'a relation from a memory to itself is rejected');
select throws_ok($$insert into public.memory_relations (owner_id, from_id, to_id, strength)
                   values ('20000000-0000-4000-8000-00000000000a', '21000000-0000-4000-8000-000000000001', '21000000-0000-4000-8000-000000000002', 1.5)$$,
  '23514', 'new row for relation "memory_relations" violates check constraint "memory_relations_strength_range"',
  'relation strength above 1 is rejected');
select throws_ok($$insert into public.memory_relations (owner_id, from_id, to_id, strength)
                   values ('20000000-0000-4000-8000-00000000000a', '21000000-0000-4000-8000-000000000001', '21000000-0000-4000-8000-000000000002', -0.1)$$,
  '23514', 'new row for relation "memory_relations" violates check constraint "memory_relations_strength_range"',
  'negative relation strength is rejected');
select throws_ok($$insert into public.memory_relations (owner_id, from_id, to_id, relation_type, strength)
                   values ('20000000-0000-4000-8000-00000000000a', '21000000-0000-4000-8000-000000000001', '21000000-0000-4000-8000-000000000002', 'likes', 0.5)$$,
  '23514', 'new row for relation "memory_relations" violates check constraint "memory_relations_type_check"',
  'an unknown relation_type is rejected');

insert into public.memory_relations (owner_id, from_id, to_id, strength)
values ('20000000-0000-4000-8000-00000000000a', '21000000-0000-4000-8000-000000000001', '21000000-0000-4000-8000-000000000002', 0.8);
select throws_ok($$insert into public.memory_relations (owner_id, from_id, to_id, strength)
                   values ('20000000-0000-4000-8000-00000000000a', '21000000-0000-4000-8000-000000000001', '21000000-0000-4000-8000-000000000002', 0.3)$$,
  '23505', 'duplicate key value violates unique constraint "memory_relations_unique_edge"',
  'a second edge with the same from/to/type is rejected');
select throws_ok($$insert into public.memory_relations (owner_id, from_id, to_id, strength)
                   values ('20000000-0000-4000-8000-00000000000a', '21000000-0000-4000-8000-000000000001', '21000000-0000-4000-8000-0000000000b1', 0.5)$$,
  '23503', null, 'an edge to another tenant''s memory is rejected by the composite foreign key');
select throws_ok($$insert into public.memory_relations (owner_id, from_id, to_id, strength)
                   values ('20000000-0000-4000-8000-00000000000b', '21000000-0000-4000-8000-000000000001', '21000000-0000-4000-8000-0000000000b1', 0.5)$$,
  '23503', null, 'an edge filed under tenant B from tenant A''s memory is rejected too');

-- Enumerated columns of the other tables (written by triggers, workers and Studio alike).
select throws_ok($$insert into public.memory_history (owner_id, memory_id, event) values ('20000000-0000-4000-8000-00000000000a', gen_random_uuid(), 'ERASE')$$,
  '23514', 'new row for relation "memory_history" violates check constraint "memory_history_event_check"', 'an unknown history event is rejected');
select throws_ok($$insert into public.memory_thread_revisions (owner_id, thread_id) values ('20000000-0000-4000-8000-00000000000a', 't');
                   insert into public.memory_change_log (owner_id, thread_id, revision, memory_id, event) values ('20000000-0000-4000-8000-00000000000a', 't', 1, gen_random_uuid(), 'erased')$$,
  '23514', 'new row for relation "memory_change_log" violates check constraint "memory_change_log_event_check"', 'an unknown change-log event is rejected');
select throws_ok($$insert into public.memory_jobs (owner_id, kind, idempotency_key) values ('20000000-0000-4000-8000-00000000000a', 'summarise', 'k1')$$,
  '23514', 'new row for relation "memory_jobs" violates check constraint "memory_jobs_kind_check"', 'an unknown job kind is rejected');
select throws_ok($$insert into public.memory_jobs (owner_id, kind, status, idempotency_key) values ('20000000-0000-4000-8000-00000000000a', 'extract', 'paused', 'k2')$$,
  '23514', 'new row for relation "memory_jobs" violates check constraint "memory_jobs_status_check"', 'an unknown job status is rejected');
select throws_ok($$insert into public.memory_events (owner_id, node, op, status) values ('20000000-0000-4000-8000-00000000000a', 'browser', 'search', 'ok')$$,
  '23514', 'new row for relation "memory_events" violates check constraint "memory_events_node_check"', 'an unknown event node is rejected');
select throws_ok($$insert into public.memory_events (owner_id, node, op, status) values ('20000000-0000-4000-8000-00000000000a', 'hotpath', 'rewrite', 'ok')$$,
  '23514', 'new row for relation "memory_events" violates check constraint "memory_events_op_check"', 'an unknown event op is rejected');
select throws_ok($$insert into public.memory_events (owner_id, node, op, status) values ('20000000-0000-4000-8000-00000000000a', 'hotpath', 'search', 'maybe')$$,
  '23514', 'new row for relation "memory_events" violates check constraint "memory_events_status_check"', 'an unknown event status is rejected');

delete from public.devai_memories where id = '21000000-0000-4000-8000-000000000002';
select is_empty($$select from public.memory_relations where to_id = '21000000-0000-4000-8000-000000000002'$$,
  'deleting a memory deletes its edges (on delete cascade)');

select * from finish();
rollback;
