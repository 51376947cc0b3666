-- Every function a retrieval runs keeps its plans for the session: none is a SQL function with a
-- SET clause, which Postgres 17 can neither inline nor keep a plan for, so it would parse and
-- plan its body again in every statement that calls it (docs/retrieval.md#speed). The walk
-- starts at what the edge functions call for a retrieval (public.retrieve_for_turn, its
-- write-behind public.record_retrievals, memory.query's public.query_memories) and follows every
-- schema-qualified call in the bodies it reaches.
begin;
select plan(3);

create temporary table reached on commit drop as
with recursive fns(oid) as (
  select p.oid from pg_proc p
   where p.pronamespace = 'public'::regnamespace
     and p.proname in ('retrieve_for_turn', 'record_retrievals', 'query_memories')
  union
  select q.oid
    from fns f
    join pg_proc p on p.oid = f.oid
   cross join lateral regexp_matches(p.prosrc, '(public|memory_search|memory_private|auth)\.([a-z_0-9]+)\s*\(', 'g') as r
    join pg_proc q on q.pronamespace = r[1]::regnamespace and q.proname = r[2]
)
select oid from fns;

select ok((select count(*) from reached) >= 15, 'the walk reaches the retrieval''s functions');
select ok(exists (select from reached where oid = 'memory_search.scoped_query(tsquery, text[])'::regprocedure),
          'the walk reaches the keyword lookups'' helpers');
select is_empty($$
  select p.oid::regprocedure::text
    from reached r
    join pg_proc p on p.oid = r.oid
    join pg_language l on l.oid = p.prolang
   where l.lanname = 'sql' and p.proconfig is not null
$$, 'no function a retrieval runs is re-planned in every statement that calls it');

select * from finish();
rollback;
