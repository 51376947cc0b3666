// memory_stats (seed 003): what a tenant's memory holds, by type, namespace, state, validity,
// pinning, priority, source and embedding model, plus relation and history counts. One statement,
// run under RLS, so the numbers are a consistent snapshot of the caller's tenant only.
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
}

export async function memoryStats(tx: Tx, topNamespaces: number): Promise<MemoryStats> {
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
                         from (select event k, count(*) n from public.memory_history group by 1) t))
    ) as stats`;
  return row!.stats;
}
