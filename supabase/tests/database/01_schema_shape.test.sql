-- The shape other code relies on: the seed's devai_memories columns with their types, the
-- additions, the indexes retrieval needs, RLS on every table, and when updated_at moves.
begin;
select plan(47);

-- Seed columns (000-devai-session-intelligence.md), with the types the seed gives them.
select col_type_is('public', 'devai_memories', 'id', 'uuid', 'seed column id is uuid');
select col_is_pk('public', 'devai_memories', 'id', 'id is the primary key');
select col_type_is('public', 'devai_memories', 'content', 'text', 'seed column content is text');
select col_not_null('public', 'devai_memories', 'content', 'content is required');
select col_type_is('public', 'devai_memories', 'embedding', 'extensions', 'vector(512)', 'seed column embedding is vector(512)');
select col_type_is('public', 'devai_memories', 'memory_type', 'text', 'seed column memory_type is text');
select col_type_is('public', 'devai_memories', 'namespace', 'text', 'seed column namespace is text');
select col_type_is('public', 'devai_memories', 'priority', 'text', 'seed column priority is text');
select col_default_is('public', 'devai_memories', 'priority', 'medium'::text, 'priority defaults to medium');
select col_type_is('public', 'devai_memories', 'source', 'text', 'seed column source is text');
select col_type_is('public', 'devai_memories', 'strength', 'double precision', 'seed column strength is double precision');
select col_default_is('public', 'devai_memories', 'strength', 1.0, 'strength defaults to 1.0');
select col_type_is('public', 'devai_memories', 'access_count', 'integer', 'seed column access_count is integer');
select col_type_is('public', 'devai_memories', 'last_accessed_at', 'timestamp with time zone', 'seed column last_accessed_at is timestamptz');
select col_type_is('public', 'devai_memories', 'session_id', 'text', 'seed column session_id is text');
select col_type_is('public', 'devai_memories', 'is_valid', 'boolean', 'seed column is_valid is boolean');
select col_type_is('public', 'devai_memories', 'superseded_by', 'uuid', 'seed column superseded_by is uuid');
select col_type_is('public', 'devai_memories', 'created_at', 'timestamp with time zone', 'seed column created_at is timestamptz');
select col_type_is('public', 'devai_memories', 'updated_at', 'timestamp with time zone', 'seed column updated_at is timestamptz');

-- Additions (ARCHITECTURE.md).
select col_type_is('public', 'devai_memories', 'owner_id', 'uuid', 'owner_id (tenant) is uuid');
select col_not_null('public', 'devai_memories', 'owner_id', 'every memory has a tenant');
select col_type_is('public', 'devai_memories', 'importance', 'smallint', 'importance is smallint');
select col_type_is('public', 'devai_memories', 'pinned', 'boolean', 'pinned is boolean');
select col_type_is('public', 'devai_memories', 'state', 'text', 'state is text');
select col_type_is('public', 'devai_memories', 'purge_at', 'timestamp with time zone', 'purge_at is timestamptz');
select col_type_is('public', 'devai_memories', 'embedding_model', 'text', 'embedding_model is text');
select col_type_is('public', 'devai_memories', 'content_hash', 'text', 'content_hash is text');
select col_type_is('public', 'devai_memories', 'fts', 'tsvector', 'fts is tsvector');
select col_type_is('public', 'devai_memories', 'metadata', 'jsonb', 'metadata is jsonb');
select col_type_is('public', 'devai_memories', 'base_strength', 'double precision', 'base_strength (idempotent decay) is double precision');
-- Derived from content by a trigger (20261123000600), not generated columns: see 09_content_derived_columns.
select col_not_null('public', 'devai_memories', 'content_hash', 'content_hash is always set');
select col_not_null('public', 'devai_memories', 'fts', 'fts is always set');

select has_table('public', 'memory_relations', 'memory_relations exists');
select has_table('public', 'memory_history', 'memory_history exists');
select has_table('public', 'memory_thread_revisions', 'memory_thread_revisions exists');
select has_table('public', 'memory_change_log', 'memory_change_log exists');

-- Indexes.
select ok(exists(select from pg_indexes
                  where schemaname = 'public' and tablename = 'devai_memories'
                    and indexdef ~ 'USING hnsw \(embedding (extensions\.)?vector_cosine_ops\)'
                    and indexdef ~ 'm=''?16''?' and indexdef ~ 'ef_construction=''?64''?'),
          'HNSW cosine index on embedding with m=16, ef_construction=64');
-- Only rows search can return: invalidating or soft-deleting a row then inserts nothing into the
-- graph (decay at 100k: 36 s of HNSW inserts before, see migration 20261123000500).
select ok(exists(select from pg_indexes
                  where schemaname = 'public' and tablename = 'devai_memories'
                    and indexdef ~ 'USING hnsw'
                    and indexdef ~ 'WHERE \(is_valid AND \(state = ''active''::text\) AND \(source IS DISTINCT FROM ''conversation''::text\)\)'),
          'the HNSW index covers valid, active rows only, raw episodes left out (20261124300300)');
select ok(exists(select from pg_indexes
                  where schemaname = 'public' and tablename = 'devai_memories'
                    and indexdef ~ '\(owner_id, namespace text_pattern_ops\)'
                    and indexdef ~ 'WHERE \(is_valid AND \(state = ''active''::text\)\)'),
          'index on owner + namespace prefix, partial on valid active rows');
select ok(exists(select from pg_indexes
                  where schemaname = 'public' and tablename = 'devai_memories'
                    and indexdef ~ 'USING gin \(strip\(fts_scoped\)\)'
                    and indexdef ~ 'WHERE \(is_valid AND \(state = ''active''::text\)'),
          'GIN index on strip(fts_scoped) (tenant-and-scope-keyed lexemes; an expression, so ANALYZE keeps their frequencies) for the keyword signal, partial on valid active rows');
select ok(exists(select from pg_indexes
                  where schemaname = 'public' and tablename = 'memory_relations'
                    and indexdef ~ '^CREATE UNIQUE INDEX .* \(from_id, to_id, relation_type\)'),
          'unique index on memory_relations (from_id, to_id, relation_type)');

-- RLS on every table in public and memory_private: a table added later without RLS fails here.
select is_empty($$
  select c.oid::regclass::text from pg_class c join pg_namespace n on n.oid = c.relnamespace
   where n.nspname in ('public', 'memory_private') and c.relkind in ('r', 'p') and not c.relrowsecurity
$$, 'row level security is enabled on every table in schemas public and memory_private');
select cmp_ok((select count(*)::int from pg_class c join pg_namespace n on n.oid = c.relnamespace
                where n.nspname = 'public' and c.relkind in ('r', 'p')), '>=', 8,
              'the RLS check sees the tables (not vacuously empty)');

select is_empty($$select p.oid::regprocedure::text from pg_proc p
                   where p.pronamespace = 'memory_private'::regnamespace
                     and has_function_privilege('public', p.oid, 'execute')$$,
                'no memory_private function is executable by PUBLIC');

-- updated_at: now() is the transaction start, so force an old value first and watch it move.
insert into public.devai_memories (id, owner_id, content, memory_type, namespace)
values ('10000000-0000-4000-8000-000000000001', tests.create_tenant(), 'uses tabs', 'semantic', 'devai/global');
update public.devai_memories set updated_at = '2000-01-01T00:00:00Z'
 where id = '10000000-0000-4000-8000-000000000001';

update public.devai_memories set strength = 0.5, base_strength = 0.5, access_count = access_count + 1,
       last_accessed_at = now()
 where id = '10000000-0000-4000-8000-000000000001';
select is((select updated_at from public.devai_memories where id = '10000000-0000-4000-8000-000000000001'),
          '2000-01-01T00:00:00Z'::timestamptz,
          'a strength/access-only update leaves updated_at alone');

update public.devai_memories set content = 'uses spaces' where id = '10000000-0000-4000-8000-000000000001';
select is((select updated_at from public.devai_memories where id = '10000000-0000-4000-8000-000000000001'),
          now(), 'a content update sets updated_at');

update public.devai_memories set updated_at = '2000-01-01T00:00:00Z'
 where id = '10000000-0000-4000-8000-000000000001';
update public.devai_memories set pinned = true where id = '10000000-0000-4000-8000-000000000001';
select is((select updated_at from public.devai_memories where id = '10000000-0000-4000-8000-000000000001'),
          now(), 'pinning sets updated_at');

select * from finish();
rollback;
