-- Security-definer code skips RLS, so what of it a tenant can set off is listed here, as audited
-- (docs/auth.md#security-definer-code): a definer function or trigger that tenants come to reach
-- later fails this file until it has been checked to read and write the caller's rows only.
-- Tenants reach schema `public` directly through PostgREST as `authenticated`, besides the API.
--
-- What the audit found, for the list below:
-- - BEFORE ROW triggers run before the policies' WITH CHECK, on whatever owner_id the tenant's row
--   names. derive_content_columns reads no table; entity_link_profile_on_insert reads the named
--   owner's memory into the new row only, which the insert policy then refuses (nothing raised,
--   locked or written); enforce_agent_token_limit returns at once for another user's row (it
--   raised that user's token count until migration 20261128925000, pgTAP 99).
-- - AFTER triggers run after the policies: the row is the caller's, and they write the caller's
--   history, change log and links only (composite foreign keys keep ids within their owner).
-- - The public RPCs take the tenant from auth.uid() and filter every read and write by it (the
--   export's copy: pgTAP 99_export_copy_is_the_tenants_alone); the
--   memory_search lookups (not served by PostgREST) answer only about auth.uid() (pgTAP 63), and so
--   does public.memory_scope_size (another tenant's scopes count 0; pgTAP 99_scope_sizes_kept_by_the_write_path).
-- - The scope-count triggers (migration 20261208300000) run after the policies, on the caller's
--   rows: count_scope_rows counts an insert's or a delete's rows per owner and scope base,
--   count_scope_update keeps an updated row's changes in memory_private.scope_count_changes, which
--   flush_scope_counts sums at the statement's end; they write memory_private's count tables only,
--   read nothing back to the caller, and a count decides a search's path, never its answers
--   (docs/retrieval.md#vector).
begin;
select plan(7);

select is_empty($$
  select p.oid::regprocedure::text from pg_proc p
   where p.prosecdef and p.pronamespace::regnamespace::text in ('public', 'memory_private', 'memory_search')
     and not coalesce(p.proconfig @> array['search_path=""'], false)
$$, 'every security-definer function pins search_path to ''''');

select is_empty($$
  select p.oid::regprocedure::text from pg_proc p
   where p.prosecdef and p.pronamespace::regnamespace::text in ('public', 'memory_private', 'memory_search')
     and (has_function_privilege('anon', p.oid, 'execute') or has_function_privilege('public', p.oid, 'execute'))
$$, 'no security-definer function is executable by anon or PUBLIC');

select results_eq($$
  select p.pronamespace::regnamespace::text || '.' || p.proname::text collate "default" from pg_proc p
   where p.prosecdef and p.pronamespace::regnamespace::text in ('public', 'memory_private', 'memory_search')
     and has_function_privilege('authenticated', p.oid, 'execute')
   order by 1
$$, $$values ('memory_search.context_lookups'), ('memory_search.entity_matches'), ('memory_search.keyword_postings'),
             ('public.finish_consolidation_run'), ('public.memory_export_begin'), ('public.memory_export_copy'),
             ('public.memory_export_drop'), ('public.memory_export_page'), ('public.memory_scope_size'), ('public.record_extract_part'), ('public.record_memory_usage'),
             ('public.take_rate_limit_token')$$,
  'the security-definer functions a tenant may call are the audited ones');

-- A trigger event counts when tenants hold that privilege on its table (a column's is enough).
select results_eq($$
  select t.tgrelid::regclass::text, p.proname::text collate "default",
         case when t.tgtype & 2 = 2 then 'BEFORE' else 'AFTER' end, e.event
    from pg_trigger t
    join pg_proc p on p.oid = t.tgfoid
    cross join lateral (values (4, 'INSERT'), (16, 'UPDATE'), (8, 'DELETE')) as e(bit, event)
   where not t.tgisinternal and p.prosecdef and t.tgtype & e.bit = e.bit
     and case e.event when 'DELETE' then has_table_privilege('authenticated', t.tgrelid, 'DELETE')
                      else has_any_column_privilege('authenticated', t.tgrelid, e.event) end
   order by 1, 2, 3, 4
$$, $$values
  ('devai_memories', 'count_scope_rows', 'AFTER', 'INSERT'),
  ('devai_memories', 'count_scope_update', 'AFTER', 'UPDATE'),
  ('devai_memories', 'derive_content_columns', 'BEFORE', 'INSERT'),
  ('devai_memories', 'derive_content_columns', 'BEFORE', 'UPDATE'),
  ('devai_memories', 'entity_link_profile_on_update', 'AFTER', 'UPDATE'),
  ('devai_memories', 'flush_scope_counts', 'AFTER', 'UPDATE'),
  ('devai_memories', 'record_memory_write', 'AFTER', 'INSERT'),
  ('devai_memories', 'record_memory_write', 'AFTER', 'UPDATE'),
  ('memory_agent_tokens', 'enforce_agent_token_limit', 'BEFORE', 'INSERT'),
  ('memory_entity_links', 'entity_link_profile_on_insert', 'BEFORE', 'INSERT'),
  ('memory_proposals', 'record_proposal_write', 'AFTER', 'INSERT'),
  ('memory_proposals', 'record_proposal_write', 'AFTER', 'UPDATE'),
  ('memory_relations', 'record_relation_write', 'AFTER', 'INSERT'),
  ('memory_relations', 'record_relation_write', 'AFTER', 'UPDATE')$$,
  'the security-definer triggers a tenant''s write sets off are the audited ones');

-- The BEFORE ROW ones, fed another tenant's ids: refused by the policy, as for ids nobody holds.
insert into public.devai_memories (id, owner_id, content, memory_type, namespace)
values ('90a00000-0000-4000-8000-0000000000a1', '90a00000-0000-4000-8000-00000000000a', 'A''s fact', 'semantic', 'devai/project/a');
insert into public.memory_entities (id, owner_id, canonical_name, entity_type) values
  ('90a00000-0000-4000-8000-0000000000e1', '90a00000-0000-4000-8000-00000000000a', 'src/a.ts', 'file'),
  ('90a00000-0000-4000-8000-0000000000e2', '90a00000-0000-4000-8000-00000000000a', 'src/b.ts', 'file');
select tests.authenticate_as('90a00000-0000-4000-8000-00000000000b');
select throws_ok($$insert into public.memory_entity_links (owner_id, memory_id, entity_id, mention)
                   values ('90a00000-0000-4000-8000-00000000000a', '90a00000-0000-4000-8000-0000000000a1',
                           '90a00000-0000-4000-8000-0000000000e2', 'src/b.ts')$$,
  '42501', 'new row violates row-level security policy for table "memory_entity_links"',
  'B''s link between A''s memory and A''s entity, owned by A, is refused by the policy');
select throws_ok($$insert into public.devai_memories (owner_id, content, memory_type, namespace)
                   values ('90a00000-0000-4000-8000-00000000000a', 'planted', 'semantic', 'devai/project/a')$$,
  '42501', 'new row violates row-level security policy for table "devai_memories"',
  'B''s memory owned by A is refused by the policy');
select tests.clear_authentication();
select is((select count(*) from public.memory_entity_links where owner_id = '90a00000-0000-4000-8000-00000000000a')
          + (select count(*) from public.devai_memories where owner_id = '90a00000-0000-4000-8000-00000000000a')
          + (select count(*) from public.memory_history where owner_id = '90a00000-0000-4000-8000-00000000000a'),
  2::bigint, 'A still holds its one memory and its ADD event, and no link');

select * from finish();
rollback;
