-- A memory changed twice in one transaction shows its last change as of any later instant
-- (migration 20261206100000, docs/retrieval.md#as-of-an-instant). Both history rows carry the
-- transaction's now(); the readers broke that tie by the rows' random ids, so about half such
-- memories showed the first change. 40 memories make a pass by chance about 1 in 10^12.
begin;
select plan(3);

insert into public.devai_memories (owner_id, content, memory_type, namespace, metadata)
select '99300100-0000-4000-8000-000000000001', 'original ' || g, 'semantic', 'devai/project/ties',
       '{"category": "goals"}'
  from generate_series(1, 40) g;
update public.devai_memories set content = 'first change ' || content
 where owner_id = '99300100-0000-4000-8000-000000000001';
update public.devai_memories set content = 'second change ' || content
 where owner_id = '99300100-0000-4000-8000-000000000001';

select is((select count(*)::int from public.memory_history h
            join public.devai_memories m on m.id = h.memory_id
           where m.owner_id = '99300100-0000-4000-8000-000000000001' and h.ts = now() and h.new_content like 'first%'),
          40, 'each memory has a history row of its first change at the transaction''s instant');
select is((select count(*)::int from public.devai_memories m cross join lateral public.memory_at(m, now() + interval '1 hour') a
            where m.owner_id = '99300100-0000-4000-8000-000000000001' and a.content like 'second change%'),
          40, 'memory_at shows every memory''s last change as of a later instant');
select is((select count(*)::int from public.devai_memories m
            where m.owner_id = '99300100-0000-4000-8000-000000000001'
              and memory_search.fts_then(m.id, 'stale', to_tsvector('english', 'stale'), now() + interval '1 hour')
                  @@ to_tsquery('english', 'second')),
          40, 'fts_then reads the words of the last change');
select * from finish();
rollback;
