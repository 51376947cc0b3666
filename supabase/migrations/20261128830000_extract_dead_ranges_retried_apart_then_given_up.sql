-- A dead extract job's messages are queued again apart from a POST's new messages, and given up
-- after three jobs held them and died.
--
-- Before, the next POST of a session queued a dead part's messages again TOGETHER with its new
-- messages, in one job. A message that always kills its job (a provider that always refuses it, a
-- payload the worker cannot handle) then killed every later job of the session: nothing the
-- session said afterwards was ever extracted, and every POST spent model calls on it again.
--
-- Now memory-extract (next-part.ts) queues the messages dead parts held as a job of their own, and
-- the new messages in another; and each part records how many jobs have held its messages:
--
-- * tries: 1 for a part of messages no dead part held; for a part queued again, 1 + the highest
--   tries of the dead parts that held its messages (memory-extract computes it from the marks it
--   looks up anyway);
-- * given_up: set when the part dies with tries >= 3 (the trigger below). A given-up part COVERS
--   its messages as a live part does: they are not queued again, a later POST goes on past them,
--   and its death undoes no later part's history (a POST that took it as covering was right).
--   Everything that reads coverage reads "not dead or given_up" where it read "not dead".
--
-- The job's row says it (GET memory-extract?job_id= shows the part, given_up included), and
-- docs/extraction.md#a-message-that-always-kills-its-job says what a user can do.

alter table public.memory_extract_parts
  add column tries smallint not null default 1,
  add column given_up boolean not null default false,
  add constraint memory_extract_parts_tries check (tries between 1 and 3),
  add constraint memory_extract_parts_given_up check (not given_up or dead);
comment on column public.memory_extract_parts.tries is
  'How many jobs have held this part''s messages, this one included: 1, or for messages dead parts held, 1 + the highest tries of those parts (docs/extraction.md).';
comment on column public.memory_extract_parts.given_up is
  'The part died with tries = 3: its messages are not queued again and count as covered, as a live part''s (docs/extraction.md).';

-- The deaths that may undo a later part's history (session-parts.ts partThrough): a given-up one does not.
drop index public.memory_extract_parts_dead;
create index memory_extract_parts_dead on public.memory_extract_parts (owner_id, session_id, died_by)
  where dead and not given_up;

-- record_extract_part: as in 20261128610000, and p_tries (1 to 3) is recorded with the part. A
-- part of messages dead parts held (tries > 1) is keyed
-- 'session:<session_id>:<count>:<digest>:try<tries>' (its plain key is the dead part's, which
-- would deduplicate it), the plain key is accepted too; a part of new messages (tries 1) keeps the
-- plain key (memory-extract/queue-plan.ts partKey). Replaces the six-argument function:
-- p_tries defaults to 1, so a call without it records a part as before.
drop function public.record_extract_part(uuid, integer, bytea, bytea[], integer, pg_snapshot);
create function public.record_extract_part(p_job uuid, p_start integer, p_start_digest bytea, p_digests bytea[],
                                           p_tail_messages integer, p_covered_as_of pg_snapshot,
                                           p_tries integer default 1)
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
  v_plain text;
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
  v_plain := format('session:%s:%s:%s', v_session, p_start + v_count, encode(p_digests[v_count], 'hex'));
  if v_count = 0 or p_start is distinct from (v_payload ->> 'offset')::integer
     or v_count is distinct from jsonb_array_length(v_payload -> 'messages')
     or p_tries is null or p_tries not between 1 and 3
     or (v_key is distinct from v_plain and (p_tries = 1 or v_key is distinct from v_plain || ':try' || p_tries))
     or p_covered_as_of is null or pg_snapshot_xmax(p_covered_as_of) > pg_current_xact_id() then
    raise exception 'record_extract_part: the part does not match job %''s key and payload', p_job
      using errcode = '22023';
  end if;
  v_seen := coalesce(v_payload -> 'context', '[]'::jsonb) || (v_payload -> 'messages');
  insert into public.memory_extract_parts (job_id, owner_id, session_id, start_position, start_digest, end_position,
                                           tail, payload_bytes, covered_as_of, tries)
  values (p_job, v_owner, v_session, p_start, p_start_digest, p_start + v_count,
          jsonb_path_query_array(v_seen, '$[$from to last]',
                                 jsonb_build_object('from', greatest(0, jsonb_array_length(v_seen) - p_tail_messages))),
          octet_length(v_payload::text), p_covered_as_of, p_tries);
  -- The marks' keys (the comment on memory_extract_marks): the same bytes memory-extract's
  -- markKey (session-parts.ts) hashes.
  v_prefix := convert_to(format('devai-mark|%s|%s|', v_owner, v_session), 'UTF8');
  insert into public.memory_extract_marks (job_id, position, key)
  select p_job, p_start + d.i::integer, substring(sha256(v_prefix || d.digest) from 1 for 16)
    from unnest(p_digests) with ordinality as d(digest, i);
end;
$$;
revoke all on function public.record_extract_part(uuid, integer, bytea, bytea[], integer, pg_snapshot, integer) from public, anon;
grant execute on function public.record_extract_part(uuid, integer, bytea, bytea[], integer, pg_snapshot, integer) to authenticated, service_role;

-- extract_part_follows_job: a dead extract job's part covers nothing any more, unless it was the
-- third job to hold its messages (tries = 3): then it is given up and covers them for good.
-- died_by says which transaction killed it (what parts queued before it compare with).
create or replace function memory_private.extract_part_follows_job()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
begin
  update public.memory_extract_parts
     set dead = true, died_by = pg_current_xact_id(), given_up = tries >= 3
   where job_id = new.id;
  return null;
end;
$$;
revoke all on function memory_private.extract_part_follows_job() from public;
