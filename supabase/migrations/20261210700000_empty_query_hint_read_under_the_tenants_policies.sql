-- memory.query's empty-answer hint reads under the tenant's row-level security.
--
-- A statement sent as the tenant (`select … from ${tenant}`, _shared/db.ts tenantItem) becomes the
-- tenant's while it runs: set_config('role', 'authenticated') is evaluated as its FROM item is
-- read. Its own tables were planned before that, as the login role, which owns them: row-level
-- security does not guard a table the statement names itself, only the statements of the
-- functions it calls (planned when they run, as the tenant). The hint (_shared/retrieval/
-- query-hint.ts) read devai_memories in the statement: it filtered the owner itself, so nothing
-- leaked, but one missing filter there would have read every tenant's rows. It is a function now,
-- plpgsql so that it is never inlined into the caller's plan, and every statement sent as the
-- tenant reads tables only through functions (docs/auth.md).

-- Whether a live memory without a category (never served by memory.query) is in the scopes: one
-- indexed read (devai_memories_owner_category), as the tenant.
create function memory_search.uncategorised_in_scopes(p_owner uuid, p_scopes text[])
returns boolean
language plpgsql
stable
set search_path = ''
as $$
begin
  return exists (
    select 1 from public.devai_memories m
     where m.owner_id = p_owner and m.is_valid and m.state = 'active'
       and (case when m.memory_type = 'procedural' then 'procedural' else m.metadata ->> 'category' end) is null
       and m.source is distinct from 'conversation'
       and (m.namespace || '/') ^@ any (public.memory_scope_prefixes(p_scopes)));
end;
$$;
revoke all on function memory_search.uncategorised_in_scopes(uuid, text[]) from public, anon;
grant execute on function memory_search.uncategorised_in_scopes(uuid, text[]) to authenticated, service_role;
