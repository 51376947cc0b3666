-- A memory's history rows written by two transactions in one instant are kept in write order too.
--
-- memory_private.history_ts_in_write_order (20261128710000) moved a row stamped before the
-- memory's newest row to just after it, and left an equal stamp alone, because the rows of one
-- transaction share its now(). But two transactions can begin in one instant: PGlite's clock (the
-- embedded database `npm start` runs) counts milliseconds, so a forget and the purge after it, or
-- an ADD and the pin after it, shared a ts; GET memory/{id}/history (newest first) and as_of
-- (public.memory_at: the last row by then) then told them apart by their random ids, and listed
-- DELETE after PURGE, or read the memory as not pinned as of after the pin. Now an equal stamp is
-- moved a microsecond on as well when the newest row was written by another transaction (its xmin
-- is not this one's); the rows of one transaction still share its timestamp. A row written in a
-- subtransaction has that subtransaction's xmin, so the next row of the same transaction is moved
-- a microsecond on: still in write order. The probe still reads memory_history_memory_ts_id only
-- (20261205200100's settings are given again: create or replace sets them anew).
create or replace function memory_private.history_ts_in_write_order() returns trigger
  language plpgsql
  set search_path = ''
  set enable_seqscan = off
  set enable_sort = off
as $$
declare
  v_last timestamptz;
  v_ours boolean;
begin
  select h.ts, h.xmin = pg_current_xact_id()::xid into v_last, v_ours
    from public.memory_history h
   where h.memory_id = new.memory_id
   order by h.ts desc
   limit 1;
  if v_last > new.ts or (v_last = new.ts and not v_ours) then
    new.ts := v_last + interval '1 microsecond';
  end if;
  return new;
end;
$$;
