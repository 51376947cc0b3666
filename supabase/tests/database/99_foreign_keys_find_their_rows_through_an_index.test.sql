-- Every foreign key of ours finds the rows referencing a row through an index that leads with its
-- first column (the referenced row's id; one leading with owner_id would read all the tenant's
-- rows): deleting a memory deletes its edges, links, usage and contradictions and clears the
-- sessions and proposals naming it by index probes, not scans. (memory_relations' (from_id,
-- owner_id) and (to_id, owner_id) stay although its ordered indexes lead with from_id and to_id:
-- `supabase db advisors` counts a foreign key covered only by an index on all its columns.)
begin;
select plan(2);

select is_empty($$
  select c.conrelid::regclass::text || ' ' || c.conname
    from pg_constraint c
   where c.contype = 'f'
     and c.connamespace in ('public'::regnamespace, 'memory_private'::regnamespace)
     and not exists (select from pg_index i
                      where i.indrelid = c.conrelid and i.indkey[0] = c.conkey[1])
$$, 'every foreign key''s referencing rows are found through an index');

-- A memory's edges go with it, found through the indexes left.
insert into public.devai_memories (id, owner_id, content, memory_type, namespace)
select ('99e10000-0000-4000-8000-00000000000' || k)::uuid, '99e00000-0000-4000-8000-00000000000a'::uuid,
       'memory ' || k, 'semantic', 'devai/project/fk'
  from generate_series(1, 3) k;
insert into public.memory_relations (owner_id, from_id, to_id, relation_type, strength)
values ('99e00000-0000-4000-8000-00000000000a', '99e10000-0000-4000-8000-000000000001', '99e10000-0000-4000-8000-000000000002', 'related_to', 0.5),
       ('99e00000-0000-4000-8000-00000000000a', '99e10000-0000-4000-8000-000000000003', '99e10000-0000-4000-8000-000000000001', 'causal', 0.5),
       ('99e00000-0000-4000-8000-00000000000a', '99e10000-0000-4000-8000-000000000002', '99e10000-0000-4000-8000-000000000003', 'related_to', 0.5);
delete from public.devai_memories where id = '99e10000-0000-4000-8000-000000000001';
select results_eq($$
  select from_id::text, to_id::text from public.memory_relations where owner_id = '99e00000-0000-4000-8000-00000000000a'
$$, $$ values ('99e10000-0000-4000-8000-000000000002', '99e10000-0000-4000-8000-000000000003') $$,
  'deleting a memory deletes the edges from it and to it, and no other');

select * from finish();
rollback;
