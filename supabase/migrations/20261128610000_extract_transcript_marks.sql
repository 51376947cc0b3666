-- memory-extract looks up what earlier jobs cover by digest instead of re-reading the jobs.
--
-- Before, every POST loaded every extract job of its session with its messages and hashed them all
-- again (after twelve 2 MB transcripts a 68-byte POST read 25 MB, 153 ms against 16), and a POST
-- with `after` rebuilt the session's transcript by chaining each job from every point known at its
-- offset (K jobs at one offset: K²·L digests, 4.4 s at K = 150, the event loop blocked for every
-- tenant). Now the transaction that queues an extract job also records, once:
--
-- * memory_extract_parts: the job's part of the session's transcript (messages [start, end)), the
--   transcript's digest at its start, its last messages (the next part's context), the size of its
--   payload and the snapshot its POST read coverage with; `dead` follows the job's status (a
--   trigger, with the transaction that killed it: a job dies once, dead is final);
-- * memory_extract_marks: after each of the part's messages, a 16-byte key of the tenant, the
--   session and the transcript's digest there, by position (about 172 bytes a message with its
--   indexes, whatever the session id).
--
-- A POST then probes the marks for its own messages' keys (one index lookup each), and a POST
-- with `after` reads the parts on its path back to one whose history is known to be covered (one
-- part unless a job of the session died since it was queued). docs/extraction.md says what a POST
-- reads and why.
--
-- Tenants read their rows; only record_extract_part writes them, and only for the job its own
-- transaction queued, so marks are always digests memory-extract computed of what the client
-- sent (a job a tenant inserts through the REST API has none and covers nothing). Jobs queued
-- before this migration have no marks either: a session that began before it is extracted again
-- from its first message on its next POST, and an `after` naming one of its points is answered
-- 409 transcript_mismatch (resend the whole transcript), once.

-- 1. Tables --------------------------------------------------------------------------------------

create table public.memory_extract_parts (
  job_id         uuid primary key references public.memory_jobs (id) on delete cascade,
  owner_id       uuid not null,
  session_id     text not null,
  start_position integer not null,
  start_digest   bytea not null,
  end_position   integer not null,
  -- The last messages the job saw (its context, then its part): the context of a part that follows it.
  tail           jsonb not null,
  payload_bytes  integer not null,
  -- The snapshot the POST that queued it took before reading what covers its history: a part
  -- killed by a transaction this snapshot does not see may have covered messages the POST took as
  -- covered (docs/extraction.md#after-sending-only-what-follows).
  covered_as_of  pg_snapshot not null,
  dead           boolean not null default false,
  -- The transaction that killed the job (the trigger below), when it is dead.
  died_by        xid8,
  constraint memory_extract_parts_range check (start_position >= 0 and end_position > start_position),
  constraint memory_extract_parts_digest check (octet_length(start_digest) = 32),
  constraint memory_extract_parts_died check (dead = (died_by is not null))
);
comment on table public.memory_extract_parts is
  'Per extract job queued by memory-extract: its part [start_position, end_position) of the session''s transcript, the transcript digest at its start, its tail (the next part''s context), dead when the job died (docs/extraction.md).';

-- One row a message, so kept small (docs/extraction.md#where-coverage-is-kept): no owner or session
-- column (a 200-character session id made a mark 750 bytes, 20 times the message it marked); the
-- key names them instead: the first 16 bytes of sha256('devai-mark|' || owner_id || '|' ||
-- session_id || '|' || the transcript's digest after the message), computed by
-- record_extract_part (memory_private.extract_mark_key) and by memory-extract for its lookups. The
-- same transcript in another session or tenant has other keys, so a lookup reads this session's
-- marks only, and every query also checks the owner and session through the mark's part.
create table public.memory_extract_marks (
  job_id   uuid not null references public.memory_extract_parts (job_id) on delete cascade,
  position integer not null,
  key      bytea not null,
  primary key (job_id, position),
  constraint memory_extract_marks_key check (octet_length(key) = 16)
);
comment on table public.memory_extract_marks is
  'After each message of an extract part (position = messages so far): a key naming the tenant, the session and the transcript''s digest there. What memory-extract looks a POST''s digests up in (docs/extraction.md).';

-- A POST's probes: the marks with one key (a hash index: equality is all a probe asks; 37 bytes a
-- mark at 200,000 marks against a btree's 51). The primary key (job_id, position), about 40 bytes a
-- mark, also serves the cascade; an index on job_id alone (a few bytes a mark, deduplicated) was
-- tried, but a table without a primary key is an advisor finding (and no row could be named). A
-- primary key led by the key instead (and no hash index) read more rows per probe as a session's
-- variants grew.
create index memory_extract_marks_by_key on public.memory_extract_marks using hash (key);
-- Whether a part's history may have lost its cover: the session's parts that died since it was queued.
create index memory_extract_parts_dead on public.memory_extract_parts (owner_id, session_id, died_by)
  where dead;

-- 2. Row level security and grants ---------------------------------------------------------------

alter table public.memory_extract_parts enable row level security;
alter table public.memory_extract_marks enable row level security;
revoke all on table public.memory_extract_parts, public.memory_extract_marks from anon, authenticated, public;
grant all on table public.memory_extract_parts, public.memory_extract_marks to service_role;
grant select on public.memory_extract_parts, public.memory_extract_marks to authenticated;
create policy "Owners can read their extract parts" on public.memory_extract_parts
  for select to authenticated using (owner_id = (select auth.uid()));
create policy "Owners can read their extract marks" on public.memory_extract_marks
  for select to authenticated using (exists (
    select 1 from public.memory_extract_parts p where p.job_id = memory_extract_marks.job_id and p.owner_id = (select auth.uid())));

-- 3. Functions -----------------------------------------------------------------------------------

-- record_extract_part: memory-extract (handler.ts, as the tenant) records the part and marks of the
-- job it has just queued. p_digests[i] is the transcript's digest after message p_start + i (its
-- last one is the key's digest); the tail is the last p_tail_messages the job saw; p_covered_as_of
-- is the snapshot the POST took before it read coverage (what a later death is compared with).
-- Refused unless the caller's own transaction inserted the job (xmin: the insert must not be in a
-- subtransaction, see handler.ts), so no REST call can plant marks; checked against the job's key
-- and payload, so a part says what its job holds. Security definer: tenants have no insert grant
-- on the tables.
create function public.record_extract_part(p_job uuid, p_start integer, p_start_digest bytea, p_digests bytea[],
                                           p_tail_messages integer, p_covered_as_of pg_snapshot)
returns void
language plpgsql
security definer
set search_path = ''
as $$
declare
  v_owner uuid;
  v_kind text;
  v_key text;
  v_mine boolean;
  v_payload jsonb;
  v_session text;
  v_seen jsonb;
  v_prefix bytea;
  v_count integer := coalesce(cardinality(p_digests), 0);
begin
  select j.owner_id, j.kind, j.idempotency_key, j.xmin = pg_current_xact_id()::xid, j.payload
    into v_owner, v_kind, v_key, v_mine, v_payload
    from public.memory_jobs j where j.id = p_job;
  if v_owner is null or v_owner is distinct from auth.uid() or v_kind <> 'extract' or not v_mine then
    raise exception 'record_extract_part: job % is not an extract job this transaction queued', p_job
      using errcode = '42501';
  end if;
  -- Taken out of the payload once: an expression on v_payload in the marks' insert would read the
  -- whole payload again for every mark (450 ms for 2,000 marks of a 2 MB payload).
  v_session := v_payload ->> 'session_id';
  if v_count = 0 or p_start is distinct from (v_payload ->> 'offset')::integer
     or v_count is distinct from jsonb_array_length(v_payload -> 'messages')
     or v_key is distinct from format('session:%s:%s:%s', v_session, p_start + v_count,
                        encode(p_digests[v_count], 'hex'))
     or p_covered_as_of is null or pg_snapshot_xmax(p_covered_as_of) > pg_current_xact_id() then
    raise exception 'record_extract_part: the part does not match job %''s key and payload', p_job
      using errcode = '22023';
  end if;
  v_seen := coalesce(v_payload -> 'context', '[]'::jsonb) || (v_payload -> 'messages');
  insert into public.memory_extract_parts (job_id, owner_id, session_id, start_position, start_digest, end_position,
                                           tail, payload_bytes, covered_as_of)
  values (p_job, v_owner, v_session, p_start, p_start_digest, p_start + v_count,
          jsonb_path_query_array(v_seen, '$[$from to last]',
                                 jsonb_build_object('from', greatest(0, jsonb_array_length(v_seen) - p_tail_messages))),
          octet_length(v_payload::text), p_covered_as_of);
  -- The marks' keys (the comment on memory_extract_marks): the same bytes memory-extract's
  -- markKey (session-parts.ts) hashes.
  v_prefix := convert_to(format('devai-mark|%s|%s|', v_owner, v_session), 'UTF8');
  insert into public.memory_extract_marks (job_id, position, key)
  select p_job, p_start + d.i::integer, substring(sha256(v_prefix || d.digest) from 1 for 16)
    from unnest(p_digests) with ordinality as d(digest, i);
end;
$$;
revoke all on function public.record_extract_part(uuid, integer, bytea, bytea[], integer, pg_snapshot) from public, anon;
grant execute on function public.record_extract_part(uuid, integer, bytea, bytea[], integer, pg_snapshot) to authenticated, service_role;

-- extract_part_follows_job: a dead extract job's part covers nothing any more (the trigger below);
-- died_by says which transaction killed it (what parts queued before it compare with).
create function memory_private.extract_part_follows_job()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
begin
  update public.memory_extract_parts set dead = true, died_by = pg_current_xact_id() where job_id = new.id;
  return null;
end;
$$;
revoke all on function memory_private.extract_part_follows_job() from public;

create trigger memory_jobs_extract_part_dies
  after update of status on public.memory_jobs
  for each row
  when (new.kind = 'extract' and new.status = 'dead' and old.status is distinct from 'dead')
  execute function memory_private.extract_part_follows_job();
