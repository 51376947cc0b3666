-- Fix: `alter default privileges in schema memory_private revoke execute on functions from public`
-- (20261122000100) is a no-op: per-schema default privileges can only add to the global
-- defaults, never remove. Functions without an explicit revoke (current_actor, history_snapshot,
-- touch_updated_at, content_hash) kept PUBLIC EXECUTE. Revoke it explicitly; the grants each
-- function needs are explicit already.
revoke execute on all functions in schema memory_private from public;
grant execute on function memory_private.content_hash(text) to authenticated, service_role;
