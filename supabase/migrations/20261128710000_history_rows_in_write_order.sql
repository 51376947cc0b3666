-- A history row's ts is its transaction's start (now()). Two writers of one memory take turns on
-- its row lock, but the one that began first may take the lock second: its row then had an
-- earlier ts than the change it follows, so GET memory/{id}/history (newest first) and as_of
-- (public.memory_at: the last row by then) put the two changes the wrong way round. Forty
-- concurrent pin / forget / restore calls on one memory (found by an outside attack) left it
-- forgotten while its newest history row and GET memory/{id}?as_of=<now> said it was active.
-- Now a row whose ts is earlier than the memory's newest row is given the instant just after
-- that row, so history is in the order the changes were made. Rows of one transaction share its
-- timestamp (an equal ts is left alone) unless one was moved: its later rows of that memory then
-- follow the moved one, a microsecond apart.

-- Before each memory_history row: keeps a memory's rows in write order (see above). One index
-- probe (memory_history_memory_ts) per row.
create function memory_private.history_ts_in_write_order() returns trigger
  language plpgsql
  set search_path = ''
as $$
declare
  v_last timestamptz;
begin
  select h.ts into v_last
    from public.memory_history h
   where h.memory_id = new.memory_id
   order by h.ts desc
   limit 1;
  if v_last > new.ts then
    new.ts := v_last + interval '1 microsecond';
  end if;
  return new;
end;
$$;
revoke all on function memory_private.history_ts_in_write_order() from public;

create trigger memory_history_ts_in_write_order
  before insert on public.memory_history
  for each row execute function memory_private.history_ts_in_write_order();
