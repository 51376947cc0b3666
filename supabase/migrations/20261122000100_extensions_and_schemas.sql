-- Layer 1: extensions and schemas.
-- Extensions live in schema `extensions`, as on Supabase (the advisors flag `vector` in public).
create schema if not exists extensions;
create extension if not exists vector with schema extensions;

-- Internal functions (triggers, job plumbing, maintenance) live here: not exposed through the API.
create schema if not exists memory_private;
revoke all on schema memory_private from public;
grant usage on schema memory_private to service_role;
-- Functions here are callable only where a grant says so (Postgres grants EXECUTE to PUBLIC by default).
alter default privileges in schema memory_private revoke execute on functions from public;
