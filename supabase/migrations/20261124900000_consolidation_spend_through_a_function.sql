-- Consolidation runs: a tenant can no longer write its own spending. The counters that the nightly
-- caps read (pairs_checked, tokens_used) were granted to authenticated for UPDATE, so a tenant could
-- set tokens_used = 0 through PostgREST and spend the caps again. Now they only grow, through
-- public.finish_consolidation_run, which pins the tenant (auth.uid()). Dry runs get a run row too
-- (dry_run true): they ask the model, so they take the same one-run-at-a-time turn and their pairs
-- and tokens count against the same caps (docs/consolidation.md#nightly-consolidation).

alter table public.memory_consolidation_runs add column dry_run boolean not null default false;

revoke update (pairs_checked, tokens_used) on public.memory_consolidation_runs from authenticated;
grant insert (dry_run) on public.memory_consolidation_runs to authenticated;

-- Closes a run of the calling tenant (auth.uid()): adds what it spent to its counters (never less:
-- negative figures count as 0) and stores its result. Returns false when the run is not the
-- caller's. Security definer because the tenant role may not update the counters; since it only
-- adds, a tenant that calls it directly only spends more of its own caps. Called by
-- tenant-consolidation.ts when a run (dry or not) ends or fails.
create or replace function public.finish_consolidation_run(p_run_id uuid, p_pairs integer, p_tokens integer, p_result jsonb)
returns boolean
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  v_owner uuid := auth.uid();
begin
  if v_owner is null then
    raise exception 'no tenant: request.jwt.claims has no sub' using errcode = '42501';
  end if;
  update public.memory_consolidation_runs
     set finished_at = coalesce(finished_at, now()),
         pairs_checked = pairs_checked + greatest(coalesce(p_pairs, 0), 0),
         tokens_used = tokens_used + greatest(coalesce(p_tokens, 0), 0),
         result = p_result
   where id = p_run_id and owner_id = v_owner;
  return found;
end;
$$;
revoke all on function public.finish_consolidation_run(uuid, integer, integer, jsonb) from public, anon;
grant execute on function public.finish_consolidation_run(uuid, integer, integer, jsonb) to authenticated, service_role;
