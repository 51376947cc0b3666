-- A setting's row cannot be deleted (docs/operations.md#settings-publicmemory_settings). The
-- functions count on every row: public.memory_setting() raises for a missing one, but the search
-- reads its nine settings in one statement (hybrid_search: rrf_k, keyword_max_terms,
-- keyword_df_cap, bm25_k1 …) and a deleted row there was a NULL it did not refuse, read as "no
-- limit" or "no threshold", so deleting keyword_max_terms by hand changed what every search does
-- instead of failing. An operator changes a value with an UPDATE; a DELETE or TRUNCATE is refused
-- saying so. A later migration that retires a setting drops it with this trigger disabled.
create function memory_private.refuse_setting_delete()
returns trigger
language plpgsql
set search_path = ''
as $$
begin
  raise exception 'a setting cannot be deleted: every function that reads public.memory_settings counts on its rows'
    using errcode = 'restrict_violation',
          hint = 'change its value instead: update public.memory_settings set value = … where name = …';
end;
$$;
revoke all on function memory_private.refuse_setting_delete() from public, anon, authenticated;

create trigger memory_settings_no_delete
  before delete on public.memory_settings
  for each row execute function memory_private.refuse_setting_delete();
create trigger memory_settings_no_truncate
  before truncate on public.memory_settings
  for each statement execute function memory_private.refuse_setting_delete();
