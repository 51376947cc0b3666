-- An episode's digest (metadata.digest, shown by the memory API and kept in its history rows) was
-- sha256 of the message as sent, secrets included: with the stored text showing where a secret was
-- redacted ([REDACTED:password]) and the role and time known, anyone who could read the episode
-- could test guesses at a weak secret offline. Digests are now of the text as stored
-- (_shared/episode-digest.ts). The digests of episodes stored with a redaction are replaced by a
-- value that says nothing about the text, in the episode and in its history rows (which outlive a
-- purge). A resend of such an old message is stored once more: its digest cannot be recomputed.
-- No history row is written for the replacement (triggers skipped where the role may, as decay
-- does in 20261122001100; else they run and record it).
do $$
declare
  v_prev_srr text := current_setting('session_replication_role');
begin
  begin
    perform set_config('session_replication_role', 'replica', true);
  exception when insufficient_privilege then
    null;
  end;

  create temporary table redacted_episodes on commit drop as
    select m.id from public.devai_memories m
     where m.source = 'conversation' and m.content like '%[REDACTED:%' and m.metadata ? 'digest'
    union
    select h.memory_id from public.memory_history h
     where h.meta ->> 'source' = 'conversation' and h.meta #> '{metadata,digest}' is not null
       and (h.new_content like '%[REDACTED:%' or h.old_content like '%[REDACTED:%');

  update public.devai_memories m
     set metadata = jsonb_set(m.metadata, '{digest}', to_jsonb('replaced:' || m.id::text))
    from redacted_episodes r
   where m.id = r.id and m.metadata ? 'digest';

  update public.memory_history h
     set meta = jsonb_set(h.meta, '{metadata,digest}', to_jsonb('replaced:' || h.memory_id::text))
    from redacted_episodes r
   where h.memory_id = r.id and h.meta #> '{metadata,digest}' is not null;

  perform set_config('session_replication_role', v_prev_srr, true);
end;
$$;
