-- The keyword lookups that scan the tenant's rows (memory_search.keyword_postings for a scope
-- above the keyed ones, in a tenant with more namespaces than the walk reads, 256) read its live
-- rows, not every row it has (migration 20261207500100). Their condition on live rows was a CASE
-- on p_as_of that the generic plan could not see into, so it read the forgotten and invalidated
-- rows too. Counted as the rows of public.devai_memories read.
begin;
select plan(2);

-- 300 namespaces of 10 memories each; in 2 of every 3 tens of them, every memory forgotten.
insert into public.devai_memories (owner_id, content, memory_type, namespace)
select '99760000-0000-4000-8000-000000000001', 'Note ' || g || case when g % 500 = 0 then ' about zanzibar' else '' end,
       'semantic', 'devai/project/p' || (g % 300)
  from generate_series(1, 3000) g;
update public.devai_memories set state = 'soft_deleted', purge_at = now() + interval '30 days'
 where owner_id = '99760000-0000-4000-8000-000000000001' and (split_part(content, ' ', 2)::int / 300) % 3 <> 0;
-- 60 other tenants' memories: the tenant is a small part of the table, as in a shared database
-- (alone in it, or with one other, reading the whole table is planned as cheap as the tenant's).
insert into public.devai_memories (owner_id, content, memory_type, namespace)
select ('99760000-0000-4000-8000-' || lpad((100 + g % 60)::text, 12, '0'))::uuid, 'Other note ' || g, 'semantic', 'devai/project/other'
  from generate_series(1, 3000) g;
analyze public.devai_memories;

select is((select p.term_df
             from memory_search.keyword_postings('99760000-0000-4000-8000-000000000001', array['devai/project/'],
                                                 array['zanzibar'::tsquery, 'walrus'], 25, 90) p),
          array[2, 0],
          'every project of a tenant with 300 namespaces: the live memories of each term');
select cmp_ok(tests.rows_read_by('public.devai_memories', $$
                select * from memory_search.keyword_postings('99760000-0000-4000-8000-000000000001', array['devai/project/'],
                                                             array['zanzibar'::tsquery, 'walrus'], 25, 90)$$),
              '<=', 3000::bigint,
              'each term reads the tenant''s 1,199 live rows, not its 3,000');

select * from finish();
rollback;
