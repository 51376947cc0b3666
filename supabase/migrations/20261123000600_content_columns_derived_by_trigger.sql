-- content_hash and fts stop being stored generated columns; a trigger derives them from content,
-- only when content is written. Same values, same indexes, same rule that nobody sets them by hand.
--
-- Why: Postgres recomputes EVERY stored generated column on EVERY update of a table that has a
-- BEFORE ROW UPDATE trigger, whatever columns the update sets (it cannot know what the trigger
-- will change; ExecInitStoredGenerated in PG 17), and devai_memories has one (updated_at). So each
-- strength-only decay update and each reinforcement re-ran to_tsvector and
-- sha256(regexp_replace(...)) on the content. That was 84% of a strength-only update: 4.2 s vs
-- 0.7 s for 57,555 rows of a 100k-row copy of the 1M benchmark table, with or without
-- session_replication_role = replica (which skips triggers but not that recomputation). A
-- column-specific trigger (UPDATE OF content, ...) does not fire for those updates.
--
-- The trigger is ENABLE ALWAYS, so it also fires under session_replication_role = replica (bulk
-- loads, logical replication): the columns can never disagree with content, as with a generated
-- column. Setting content_hash or fts directly is overridden by the derived value. NOT NULL holds
-- what the generated expressions guaranteed (content is NOT NULL).

-- Derives content_hash (memory_private.content_hash) and fts (English tsvector) from NEW.content.
-- Security definer: memory_private.content_hash is resolved by name at run time, and the tenant
-- role that inserts through the API has no usage on memory_private. Touches no table.
create or replace function memory_private.derive_content_columns()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
begin
  new.content_hash := memory_private.content_hash(new.content);
  new.fts := to_tsvector('english'::regconfig, new.content);
  return new;
end;
$$;
revoke all on function memory_private.derive_content_columns() from public;

alter table public.devai_memories
  alter column content_hash drop expression,
  alter column fts drop expression;

create trigger devai_memories_derive_content
  before insert or update of content, content_hash, fts on public.devai_memories
  for each row execute function memory_private.derive_content_columns();
alter table public.devai_memories enable always trigger devai_memories_derive_content;

alter table public.devai_memories
  alter column content_hash set not null,
  alter column fts set not null;

comment on column public.devai_memories.content_hash is
  'sha256 (hex) of the lower-cased, whitespace-collapsed content (memory_private.content_hash): the exact-duplicate fast path. Derived from content by trigger devai_memories_derive_content on insert and content change; a value written directly is replaced.';
comment on column public.devai_memories.fts is
  'English tsvector of content for hybrid search. Derived from content by trigger devai_memories_derive_content on insert and content change; a value written directly is replaced.';
