-- One text, one form: a text and its canonically equivalent spellings compare the same.
-- "café" can be sent as one letter é (U+00E9, NFC, what most keyboards type) or as e followed by
-- the combining acute accent (U+0301, NFD, what macOS file names and some editors hand over).
-- Unicode says the two are the same text, and they look the same, but the duplicate check hashed
-- their bytes: `remember` of each stored two live memories saying "Le café ouvre à huit heures"
-- (docs: README#one-live-memory-per-text), and a search typed in one form found no memory written
-- in the other by its words (the keyword signal's lexemes differed).
-- Now the duplicate hash and the text the search parser is given (stored words and a query's)
-- are read in NFC; the stored content stays as sent. Compatibility forms are not folded (the
-- ligature "ﬁ", fullwidth letters): NFKC changes what some texts mean (superscripts, ½).
-- pgTAP 100_text_compared_in_one_unicode_form; tests/unicode_forms.test.ts.

-- The exact-duplicate key of a memory's text: sha256 of it in NFC, lower-cased, blanks collapsed.
-- Called by the content trigger (memory_private.derive_content_columns) and, through
-- contentHashSql (_shared/memories/record.ts), by every writer's duplicate check.
create or replace function memory_private.content_hash(p_content text)
returns text
language sql
immutable
parallel safe
set search_path = ''
as $$
  select encode(sha256(convert_to(lower(btrim(regexp_replace(normalize(p_content, nfc), '\s+', ' ', 'g'))), 'UTF8')), 'hex')
$$;
revoke all on function memory_private.content_hash(text) from public;
grant execute on function memory_private.content_hash(text) to authenticated, service_role;

-- The text the parser is given for a memory's content or a query (migration 20261208600000): in
-- NFC, so a text's words are the same in either form, then a space after every 128 characters of
-- a run without an ASCII blank (the parser is quadratic in such a run).
-- Called by public.memory_content_fts and public.memory_keyword_terms.
create or replace function public.memory_fts_text(p_text text)
returns text
language plpgsql
immutable
parallel safe
set search_path = ''
as $$
begin
  return pg_catalog.regexp_replace(normalize(p_text, nfc), '([^ \t\n\v\f\r]{128})(?=[^ \t\n\v\f\r])', '\1 ', 'g');
end;
$$;
revoke all on function public.memory_fts_text(text) from public, anon;
grant execute on function public.memory_fts_text(text) to authenticated, service_role;

-- Rows written in another form get their key and words again (the content trigger derives both
-- when content_hash is set). Nothing else changes: no history row, updated_at kept. The filter
-- reads every row once (a quick check per text; rows already in NFC, nearly all, are not written).
update public.devai_memories
   set content_hash = content_hash
 where content is not nfc normalized;

comment on column public.devai_memories.content_hash is 'sha256 (hex) of the content in NFC, lower-cased, whitespace-collapsed (memory_private.content_hash): the exact-duplicate fast path. Derived from content by trigger devai_memories_derive_content on insert and content change; a value written directly is replaced.';
