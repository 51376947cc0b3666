-- GET memory/{id}/history pages a memory's audit rows newest first with a keyset cursor on
-- (ts, id): rows written in one transaction share its ts, so the id is the tiebreak that lets a
-- page end among them without skipping or repeating one. memory_history_memory_ts orders by ts
-- alone, so a page after a cursor would read every newer row and sort the ties; this index has the
-- page's whole order, so each page starts at its cursor and reads only its rows. It replaces the
-- old one, whose every use (the page, memory_private.history_ts_in_write_order's probe for the
-- newest row, explain's last events) it serves.
create index memory_history_memory_ts_id on public.memory_history (memory_id, ts desc, id desc);
drop index public.memory_history_memory_ts;
