-- Supabase's hybrid_search, as its guide "Hybrid search" (supabase.com/docs/guides/ai/hybrid-search)
-- writes it: full-text search (websearch_to_tsquery, ranked by ts_rank_cd) and semantic search
-- (inner product <#>), each limited to least(match_count, 30) * 2 rows, fused with reciprocal rank
-- fusion (full_text_weight = semantic_weight = 1, rrf_k = 50). Installed by `npm run eval` into
-- its own schema `eval`, never by a migration. What differs from the guide, and why:
--   * match_owner, match_scopes: a tenant filter and the retrieval scopes (global, the project,
--     user), so it searches exactly the rows the service's own retrieval may return, plus that
--     retrieval's eligibility rules (valid, active, strength > 0.05);
--   * match_embedding_model: vectors of another model are never compared;
--   * the text search configuration is named ('english', what the fts column is built with)
--     instead of relying on the database default, which is english on Supabase but not everywhere;
--   * ties in either list are broken by content, so the eval gives the same list on every run;
--   * it returns ids and the fused score instead of whole rows (the eval needs only the order);
--   * security invoker with search_path '' like every function of the project; called as the
--     tenant, so row level security applies too.
create schema if not exists eval;
grant usage on schema eval to authenticated;

create or replace function eval.supabase_hybrid_search(
  query_text text,
  query_embedding extensions.vector(512),
  match_count int,
  match_owner uuid,
  match_scopes text[],
  match_embedding_model text,
  full_text_weight float = 1,
  semantic_weight float = 1,
  rrf_k int = 50
)
returns table (id uuid, score double precision)
language sql
stable
security invoker
set search_path = ''
as $$
with full_text as (
  select
    m.id,
    -- Note (the guide's): ts_rank_cd is not indexable but only ranks the matches of the where clause
    row_number() over (
      order by pg_catalog.ts_rank_cd(m.fts, pg_catalog.websearch_to_tsquery('english', query_text)) desc, m.content
    ) as rank_ix
  from public.devai_memories m
  where m.fts @@ pg_catalog.websearch_to_tsquery('english', query_text)
    and m.owner_id = match_owner and m.is_valid and m.state = 'active' and m.strength > 0.05
    and (m.namespace || '/') ^@ any (match_scopes)
  order by rank_ix
  limit least(match_count, 30) * 2
),
semantic as (
  select
    m.id,
    row_number() over (order by m.embedding operator(extensions.<#>) query_embedding, m.content) as rank_ix
  from public.devai_memories m
  where m.owner_id = match_owner and m.is_valid and m.state = 'active' and m.strength > 0.05
    and (m.namespace || '/') ^@ any (match_scopes)
    and m.embedding_model = match_embedding_model and m.embedding is not null
  order by rank_ix
  limit least(match_count, 30) * 2
)
select
  m.id,
  coalesce(1.0 / (rrf_k + full_text.rank_ix), 0.0) * full_text_weight +
  coalesce(1.0 / (rrf_k + semantic.rank_ix), 0.0) * semantic_weight as score
from full_text
  full outer join semantic on full_text.id = semantic.id
  join public.devai_memories m on coalesce(full_text.id, semantic.id) = m.id
order by score desc, m.content
limit least(match_count, 30)
$$;

revoke all on function eval.supabase_hybrid_search(text, extensions.vector, int, uuid, text[], text, float, float, int) from public, anon;
grant execute on function eval.supabase_hybrid_search(text, extensions.vector, int, uuid, text[], text, float, float, int) to authenticated;
