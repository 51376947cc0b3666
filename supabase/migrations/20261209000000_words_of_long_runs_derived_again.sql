-- Memories written before migration 20261208600000 whose content holds a run of more than 128
-- characters without a blank (a long URL, a token, a minified line) kept the words Postgres's
-- parser read from the whole run, while every query is now parsed with the run cut
-- (public.memory_fts_text): such a memory's long words no longer matched the same text asked.
-- Their words are derived again, as the content trigger derives them now. Setting fts to itself
-- runs the trigger (memory_private.derive_content_columns, BEFORE UPDATE OF fts) and nothing that
-- records a change: no history row, no updated_at, no scope count (none of their columns moves).
-- Rows whose words are already today's (every memory without such a run, every one written
-- since) are not written. pgTAP 99_words_of_long_runs_derived_again.
create function memory_private.derive_long_run_words_again()
returns integer
language plpgsql
security definer
set search_path = ''
as $$
declare
  v_rows integer;
begin
  update public.devai_memories m
     set fts = m.fts
   where m.content ~ '[^ \t\n\v\f\r]{129}'
     and m.fts is distinct from public.memory_content_fts(m.content);
  get diagnostics v_rows = row_count;
  return v_rows;
end;
$$;
revoke all on function memory_private.derive_long_run_words_again() from public, anon, authenticated;

select memory_private.derive_long_run_words_again();
