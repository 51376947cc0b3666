-- The export reads a tenant's relations and history a page at a time, keyset on (created_at, id)
-- and (ts, id) (supabase/functions/_shared/services/memory-export.ts), in the order of an index
-- (migration 20261128500200): memory_relations (owner_id, created_at, id) and memory_history
-- (owner_id, ts, id), plain ascending b-trees on every row (read backwards, the history one serves
-- the newest-first reads), and the old memory_history (owner_id, ts desc) is gone.
begin;
select plan(6);

select has_index('public', 'memory_relations', 'memory_relations_owner_created',
                 array['owner_id', 'created_at', 'id']::name[],
                 'relations: an index on (owner_id, created_at, id)');
select has_index('public', 'memory_history', 'memory_history_owner_ts_id',
                 array['owner_id', 'ts', 'id']::name[],
                 'history: an index on (owner_id, ts, id)');

-- has_index compares column names only: the whole definition says b-tree, ascending, every row.
select is((select indexdef from pg_indexes where schemaname = 'public' and indexname = 'memory_relations_owner_created'),
          'CREATE INDEX memory_relations_owner_created ON public.memory_relations USING btree (owner_id, created_at, id)',
          'relations: ascending b-tree over all rows (no predicate, not unique)');
select is((select indexdef from pg_indexes where schemaname = 'public' and indexname = 'memory_history_owner_ts_id'),
          'CREATE INDEX memory_history_owner_ts_id ON public.memory_history USING btree (owner_id, ts, id)',
          'history: ascending b-tree over all rows (no predicate, not unique)');

select hasnt_index('public', 'memory_history', 'memory_history_owner_ts',
                   'history: the old (owner_id, ts desc) index is dropped');
select is_empty($$
  select indexname from pg_indexes
   where schemaname = 'public' and tablename = 'memory_history' and indexdef like '%(owner_id, ts DESC)'
$$, 'history: no index on (owner_id, ts desc) under another name either');

select * from finish();
rollback;
