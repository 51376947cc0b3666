-- Used by `scripts/db.sh reset` where the database itself cannot be dropped (database postgres
-- holds pg_cron; a remote database is not ours to drop). Removes what our migrations created.
do $$
begin
  if exists (select from pg_extension where extname = 'pg_cron') then
    perform cron.unschedule(jobid) from cron.job where jobname like 'devai-%';
  end if;
end $$;
drop schema if exists memory_private cascade;
drop schema if exists memory_search cascade;
drop schema if exists supabase_migrations cascade;
drop schema if exists public cascade;
create schema public;
grant usage on schema public to public;
grant create on schema public to postgres;
drop extension if exists vector cascade;
