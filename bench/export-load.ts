// Loads the export-at-scale corpus (docs/operations.md#exports): one big tenant of BIG memories
// and five small tenants of 1,000, rows drawn from the bench corpus (bench/corpus.ts) and COPYed
// as the bench loads them (triggers off, indexes built after: with the history triggers on, 150k
// rows went at 40 a second on the shared machine). Each memory then gets the ADD history row the
// service's trigger writes (memory_private.record_memory_write: same columns, same meta), a fifth
// of the big tenant's memories one correction (content changed, an UPDATE row), and the bench's
// related_to edges.
// deno run -A --config supabase/functions/deno.json bench/export-load.ts <database url> [big]
import postgres from "postgres";
import { copyLine, copyRows, Corpus, quoteIdent } from "./corpus.ts";
import { log, now } from "./lib.ts";
import { BIG_TENANT, SMALL_TENANTS } from "./export-tenants.ts";

const SMALL = 1_000;

const url = Deno.args[0] ?? Deno.env.get("DATABASE_URL")!;
const big = Number(Deno.args[1] ?? 150_000);
const total = big + SMALL * SMALL_TENANTS.length;
const corpus = new Corpus(total, 42);
const sql = postgres(url, {
  max: 1,
  onnotice: () => {},
  connection: { session_replication_role: "replica", application_name: "devai-export-load" },
});
await sql`truncate public.devai_memories, public.memory_history, public.memory_relations cascade`;
const indexes = await sql<{ indexname: string; indexdef: string }[]>`
  select indexname, indexdef from pg_indexes
   where schemaname = 'public' and tablename = 'devai_memories'
     and (indexdef ilike '%using hnsw%' or indexdef ilike '%using gin%')`;
for (const ix of indexes) await sql.unsafe(`drop index public.${quoteIdent(ix.indexname)}`);
const t0 = now();
const columns = "id, content, embedding, memory_type, namespace, priority, source, strength, base_strength, " +
  "access_count, last_accessed_at, session_id, is_valid, state, purge_at, created_at, updated_at, owner_id, " +
  "importance, pinned, embedding_model, metadata";
await copyRows(sql, `copy public.devai_memories (${columns}) from stdin`, total, (i) => {
  const row = corpus.row(i);
  const small = i >= big;
  row.ownerId = small ? SMALL_TENANTS[(i - big) % SMALL_TENANTS.length]! : BIG_TENANT;
  // The small tenants retrieve through the local server, whose embedder is local-hash-512-v1.
  if (small && row.embeddingModel) row.embeddingModel = "local-hash-512-v1";
  return copyLine(row);
});
log(`copied ${total} memories in ${((now() - t0) / 1000).toFixed(1)} s`);
const t1 = now();
// What record_memory_write writes for an insert, and for a correction of the content.
const snapshot = sql`memory_private.history_snapshot(m) || jsonb_build_object('thread_id', 'default')`;
await sql`
  insert into public.memory_history (owner_id, memory_id, event, old_ref, new_ref, actor, old_content, new_content, meta, ts)
  select m.owner_id, m.id, 'ADD', null, m.id, 'user', null, m.content, ${snapshot}, m.created_at
    from public.devai_memories m`;
await sql`
  with corrected as (
    update public.devai_memories m
       set content = m.content || ' (corrected: checked again)', updated_at = m.created_at + interval '1 day'
     where m.owner_id = ${BIG_TENANT} and abs(hashtext(m.id::text)) % 5 = 0
    returning m.*
  )
  insert into public.memory_history (owner_id, memory_id, event, old_ref, new_ref, actor, old_content, new_content, meta, ts)
  select m.owner_id, m.id, 'UPDATE', m.id, m.id, 'user', left(m.content, -27), m.content, ${snapshot},
         m.created_at + interval '1 day'
    from corrected m`;
log(`history written in ${((now() - t1) / 1000).toFixed(1)} s`);
await sql`
  insert into public.memory_relations (owner_id, from_id, to_id, relation_type, strength)
  select owner_id, id, nxt, 'related_to', 0.5 + (abs(hashtext(id::text)) % 500) / 1000.0
    from (select owner_id, id, lead(id) over (partition by owner_id, namespace order by created_at, id) as nxt
            from public.devai_memories) s
   where nxt is not null and abs(hashtext(id::text)) % 5 = 0`;
await sql`set maintenance_work_mem = '512MB'`;
for (const ix of indexes) {
  const t2 = now();
  await sql.unsafe(ix.indexdef);
  log(`index ${ix.indexname} built in ${((now() - t2) / 1000).toFixed(1)} s`);
}
await sql`vacuum analyze public.devai_memories, public.memory_history, public.memory_relations`;
const counts = await sql`
  select owner_id, (select count(*) from public.devai_memories m where m.owner_id = o.owner_id) as memories,
         (select count(*) from public.memory_history h where h.owner_id = o.owner_id) as history,
         (select count(*) from public.memory_relations r where r.owner_id = o.owner_id) as relations
    from (select distinct owner_id from public.devai_memories) o`;
console.log(counts);
await sql.end();
