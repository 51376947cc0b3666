-- content_hash and fts are derived from content by trigger devai_memories_derive_content
-- (20261123000600): on every insert, on every content change, also under
-- session_replication_role = replica (bulk loads), and a value written directly is replaced. An
-- update that does not write content (decay, reinforcement) does not recompute them: that is what
-- keeps the nightly decay cheap (a stored generated column was recomputed on every update).
begin;
select plan(11);

create temp table t (name text primary key, id uuid);
grant all on t to authenticated;
select set_config('tests.tenant', tests.create_tenant()::text, true);

-- Insert as the tenant, through RLS and the column grants, as the API does.
select tests.authenticate_as(current_setting('tests.tenant')::uuid);
with ins as (
  insert into public.devai_memories (owner_id, content, memory_type, namespace)
  values (current_setting('tests.tenant')::uuid, '  The  API uses   PNPM workspaces ', 'semantic', 'devai/global')
  returning id)
insert into t select 'tenant', id from ins;
select throws_ok(
  $$update public.devai_memories set content_hash = 'forged' where id = (select id from t where name = 'tenant')$$,
  '42501', null, 'a tenant cannot write content_hash');
select tests.clear_authentication();

select is((select content_hash from public.devai_memories where id = (select id from t where name = 'tenant')),
          encode(sha256(convert_to('the api uses pnpm workspaces', 'UTF8')), 'hex'),
          'insert: content_hash is sha256 of the lower-cased, whitespace-collapsed content');
select is((select fts from public.devai_memories where id = (select id from t where name = 'tenant')),
          to_tsvector('english', '  The  API uses   PNPM workspaces '),
          'insert: fts is the English tsvector of the content');

-- A content change re-derives both.
update public.devai_memories set content = 'The API uses npm workspaces'
 where id = (select id from t where name = 'tenant');
select is((select content_hash from public.devai_memories where id = (select id from t where name = 'tenant')),
          memory_private.content_hash('The API uses npm workspaces'), 'content update: content_hash follows');
select is((select fts from public.devai_memories where id = (select id from t where name = 'tenant')),
          to_tsvector('english', 'The API uses npm workspaces'), 'content update: fts follows');

-- Written directly (a Studio edit as postgres): replaced by the derived value.
update public.devai_memories set fts = to_tsvector('english', 'forged'), content_hash = 'forged'
 where id = (select id from t where name = 'tenant');
select is((select (content_hash, fts)::text from public.devai_memories where id = (select id from t where name = 'tenant')),
          (memory_private.content_hash('The API uses npm workspaces'), to_tsvector('english', 'The API uses npm workspaces'))::text,
          'content_hash and fts set by hand are replaced by the derived values');
with ins as (
  insert into public.devai_memories (owner_id, content, memory_type, namespace, content_hash, fts)
  values (current_setting('tests.tenant')::uuid, 'Deploys run on Fridays', 'semantic', 'devai/global',
          'forged', to_tsvector('english', 'forged'))
  returning content_hash)
select is((select content_hash from ins), memory_private.content_hash('Deploys run on Fridays'),
          'an insert naming content_hash gets the derived value');

-- A bulk load with triggers off still derives them (the trigger fires ALWAYS).
set local session_replication_role = replica;
with ins as (
  insert into public.devai_memories (owner_id, content, memory_type, namespace)
  values (current_setting('tests.tenant')::uuid, 'Bulk loaded fact', 'semantic', 'devai/global')
  returning content_hash, fts)
select is((select (content_hash, fts)::text from ins),
          (memory_private.content_hash('Bulk loaded fact'), to_tsvector('english', 'Bulk loaded fact'))::text,
          'under session_replication_role = replica the columns are still derived');
reset session_replication_role;

-- An update that does not write content leaves them alone. To see that, plant a value the
-- trigger would not compute (with the trigger off for one statement), then update strength.
alter table public.devai_memories disable trigger devai_memories_derive_content;
update public.devai_memories set fts = to_tsvector('english', 'planted')
 where id = (select id from t where name = 'tenant');
alter table public.devai_memories enable always trigger devai_memories_derive_content;
update public.devai_memories set strength = 0.4, base_strength = 0.4, last_accessed_at = now()
 where id = (select id from t where name = 'tenant');
select is((select fts from public.devai_memories where id = (select id from t where name = 'tenant')),
          to_tsvector('english', 'planted'), 'a strength/access update does not recompute fts');
select memory_private.run_decay(now() + interval '10 days');
select is((select fts from public.devai_memories where id = (select id from t where name = 'tenant')),
          to_tsvector('english', 'planted'), 'the decay job does not recompute fts');
select is((select strength from public.devai_memories where id = (select id from t where name = 'tenant')),
          0.4::double precision * power(0.95::double precision, 10), '(the decay job did write that row)');

select * from finish();
rollback;
