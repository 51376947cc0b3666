-- The nightly prune of full rate-limit buckets (memory_private.prune_rate_limit_buckets) deletes the
-- rows it picked by their address (ctid), a TID scan whatever the table's statistics.
--
-- Since 20261130910000 it deleted `using due where b.owner_id = due.owner_id and ...`: planned on
-- statistics from when the table was small (not analysed since it grew, as between two autovacuum
-- ANALYZEs, or rows written in the same transaction), the join was a nested loop reading every
-- picked row for every bucket: 20,000 full buckets took 52 to 105 s (399,980,000 rows removed by
-- the join filter), 50,000 would take about 10 minutes. Now the picked rows, locked (for update skip
-- locked: no concurrent update can move them until this transaction ends), are deleted by ctid:
-- 20,000 in well under a second (pgTAP 99_rate_limit_prune_reads_each_bucket_once: the old function ran past its 30 s hang guard on 30,000).
create or replace function memory_private.prune_rate_limit_buckets(p_now timestamptz default now(), p_limit integer default 100000)
returns jsonb
language plpgsql
volatile
security invoker
set search_path = ''
as $$
declare
  v_deleted integer;
begin
  if p_limit is null or p_limit < 1 then
    raise exception 'p_limit must be at least 1, got %', p_limit using errcode = '22023';
  end if;
  delete from memory_private.rate_limit_buckets b
   where b.ctid = any (array(
     with limits as materialized (
       select c.route_class,
              public.memory_setting('rate_limit_' || c.route_class || '_per_minute')::double precision / 60 as rate,
              public.memory_setting('rate_limit_' || c.route_class || '_burst')::double precision as burst
         from (values ('read'), ('write'), ('heavy')) c (route_class)
     )
     select d.ctid
       from memory_private.rate_limit_buckets d
       join limits l on l.route_class = d.route_class
      where l.rate = 0
         or d.tokens + greatest(0, extract(epoch from p_now - d.refilled_at)) * l.rate >= l.burst
      limit p_limit
        for update of d skip locked));
  get diagnostics v_deleted = row_count;
  return jsonb_build_object(
    'deleted', v_deleted,
    'remaining', exists (
      with limits as materialized (
        select c.route_class,
               public.memory_setting('rate_limit_' || c.route_class || '_per_minute')::double precision / 60 as rate,
               public.memory_setting('rate_limit_' || c.route_class || '_burst')::double precision as burst
          from (values ('read'), ('write'), ('heavy')) c (route_class)
      )
      select from memory_private.rate_limit_buckets b
        join limits l on l.route_class = b.route_class
       where l.rate = 0
          or b.tokens + greatest(0, extract(epoch from p_now - b.refilled_at)) * l.rate >= l.burst));
end;
$$;
