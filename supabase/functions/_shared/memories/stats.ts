// memory_stats (seed 003): what a tenant's memory holds, by type, namespace, state, validity,
// pinning, priority, source and embedding model, plus relation and history counts and the usage
// feedback agents reported; and what the background work has to show (docs/consolidation.md):
// memories not yet re-embedded with the configured model, secrets the redactor replaced or
// dropped, open contradictions, pending proposals. Run under RLS, in one transaction, so the
// numbers are the caller's tenant only.
import type { Tx } from "../db.ts";

export interface MemoryStats {
  total: number;
  by_memory_type: Record<string, number>;
  by_state: Record<string, number>;
  by_priority: Record<string, number>;
  by_source: Record<string, number>;
  by_embedding_model: Record<string, number>;
  validity: { valid: number; invalid: number; superseded: number };
  pinned: { pinned: number; unpinned: number };
  namespaces: { distinct: number; top: { namespace: string; count: number }[] };
  relations: { total: number; by_type: Record<string, number> };
  history: { total: number; by_event: Record<string, number> };
  /** Usage feedback (POST memory/usage; docs/context.md#usage-feedback). Shares are null until there is something to divide by. */
  usage: {
    reports: number;
    retrieved: number;
    cited: number;
    /** Memories reported at least once, and those of them never cited (what ranking demotes). */
    memories_reported: number;
    never_cited: number;
    /** Cited memories that context/predict had predicted (its answer), over those cited in sessions with predictions. */
    prediction_accuracy: number | null;
    /** Tokens of cited memories over tokens of all reported (injected) ones. */
    cited_token_share: number | null;
    injected_tokens: number;
    cited_tokens: number;
  };
  /** Valid, active memories (raw episodes aside) whose vector is not of the configured model: POST memory/reindex. */
  embeddings: { configured_model: string; to_reindex: number };
  redactions: { total: number; dropped: number; by_kind: Record<string, number>; by_writer: Record<string, number> };
  contradictions: { open: number; resolved: number };
  proposals: { pending: number };
}

export async function memoryStats(tx: Tx, topNamespaces: number, configuredModel: string): Promise<MemoryStats> {
  const [row] = await tx<{ stats: MemoryStats }[]>`
    with m as (select memory_type, state, priority, source, embedding_model, is_valid, superseded_by, pinned, namespace
                 from public.devai_memories)
    select jsonb_build_object(
      'total', (select count(*) from m),
      'by_memory_type', (select coalesce(jsonb_object_agg(k, n), '{}') from (select memory_type k, count(*) n from m group by 1) t),
      'by_state', (select coalesce(jsonb_object_agg(k, n), '{}') from (select state k, count(*) n from m group by 1) t),
      'by_priority', (select coalesce(jsonb_object_agg(k, n), '{}') from (select priority k, count(*) n from m group by 1) t),
      'by_source', (select coalesce(jsonb_object_agg(k, n), '{}') from (select coalesce(source, 'none') k, count(*) n from m group by 1) t),
      'by_embedding_model', (select coalesce(jsonb_object_agg(k, n), '{}')
                               from (select coalesce(embedding_model, 'none') k, count(*) n from m group by 1) t),
      'validity', jsonb_build_object(
          'valid', (select count(*) from m where is_valid),
          'invalid', (select count(*) from m where not is_valid),
          'superseded', (select count(*) from m where superseded_by is not null)),
      'pinned', jsonb_build_object(
          'pinned', (select count(*) from m where pinned),
          'unpinned', (select count(*) from m where not pinned)),
      'namespaces', jsonb_build_object(
          'distinct', (select count(distinct namespace) from m),
          'top', (select coalesce(jsonb_agg(jsonb_build_object('namespace', namespace, 'count', n) order by n desc, namespace), '[]')
                    from (select namespace, count(*) n from m group by 1 order by 2 desc, 1 limit ${topNamespaces}) t)),
      'relations', jsonb_build_object(
          'total', (select count(*) from public.memory_relations),
          'by_type', (select coalesce(jsonb_object_agg(k, n), '{}')
                        from (select relation_type k, count(*) n from public.memory_relations group by 1) t)),
      'history', jsonb_build_object(
          'total', (select count(*) from public.memory_history),
          'by_event', (select coalesce(jsonb_object_agg(k, n), '{}')
                         from (select event k, count(*) n from public.memory_history group by 1) t)),
      'usage', (select jsonb_build_object(
          'reports', coalesce(t.reports, 0),
          'retrieved', coalesce(t.retrieved, 0),
          'cited', coalesce(t.cited, 0),
          'memories_reported', (select count(*) from public.memory_usage),
          'never_cited', (select count(*) from public.memory_usage where citation_count = 0),
          'prediction_accuracy', round(t.cited_prefetched::numeric / nullif(t.cited_in_predicted_sessions, 0), 4),
          'cited_token_share', round(t.cited_tokens::numeric / nullif(t.injected_tokens, 0), 4),
          'injected_tokens', coalesce(t.injected_tokens, 0),
          'cited_tokens', coalesce(t.cited_tokens, 0))
        from (select 1) one left join public.memory_usage_totals t on true)
    ) as stats`;
  const [bg] = await tx<Pick<MemoryStats, "embeddings" | "redactions" | "contradictions" | "proposals">[]>`
    with r as (select meta from public.memory_events where op = 'redact')
    select jsonb_build_object(
             'configured_model', ${configuredModel}::text,
             'to_reindex', (select count(*) from public.devai_memories
                             where is_valid and state = 'active' and source is distinct from 'conversation'
                               and (embedding is null or embedding_model is distinct from ${configuredModel}))) as embeddings,
           jsonb_build_object(
             'total', (select coalesce(sum((meta ->> 'redacted')::int), 0) from r),
             'dropped', (select coalesce(sum((meta ->> 'dropped')::int), 0) from r),
             'by_kind', (select coalesce(jsonb_object_agg(k, n), '{}') from
                           (select k, sum(v::int) as n from r, jsonb_each_text(r.meta -> 'by_kind') as e(k, v) group by k) t),
             'by_writer', (select coalesce(jsonb_object_agg(k, n), '{}') from
                             (select meta ->> 'writer' as k, sum((meta ->> 'redacted')::int + (meta ->> 'dropped')::int) as n from r group by 1) t)) as redactions,
           jsonb_build_object(
             'open', (select count(*) from public.memory_contradictions c
                       join public.devai_memories a on a.id = c.memory_a join public.devai_memories b on b.id = c.memory_b
                      where c.resolution is null and a.is_valid and a.state = 'active' and b.is_valid and b.state = 'active'),
             'resolved', (select count(*) from public.memory_contradictions where resolution is not null)) as contradictions,
           jsonb_build_object('pending', (select count(*) from public.memory_proposals where status = 'pending')) as proposals`;
  return { ...row!.stats, ...bg! };
}
