// Bench-only database objects (schema `bench`, never a migration) and connection helpers.
//
// The variants of match_memories are derived from the deployed function's own definition
// (pg_get_functiondef), so they follow the migration when it changes. match_memories picks its
// path itself: an exact search when the scope holds at most public.memory_exact_scan_limit
// memories (exact_scan_max_rows, or more in a big table: 20261125760300), else HNSW with iterative
// scans. The variants pin the path and drop the function's
// own SET hnsw.ef_search, so the suite's ef_search sweep applies to them:
//   bench.match_memories_hnsw_off / _hnsw_relaxed   always the HNSW path, iterative scan off /
//                                   relaxed_order
//   bench.match_memories_exact      always the exact path: every in-scope vector compared (ground
//                                   truth for recall)
//   bench.match_memories_naive      the seed's plain function (LIKE prefix, threshold in WHERE, no
//                                   iterative scan) plus an owner filter so it is multi-tenant at all
//   bench.timed_match               server-side latency: clock_timestamp() around one call
import postgres from "postgres";
import { tenantItem } from "../supabase/functions/_shared/db.ts";

export type Sql = postgres.Sql;

export function connect(url: string, max = 10, app = "devai-bench"): Sql {
  return postgres(url, {
    max,
    prepare: false,
    onnotice: () => {},
    idle_timeout: 30,
    connect_timeout: 10,
    connection: { application_name: app },
  });
}

const MATCH_SIG =
  "public.match_memories(extensions.vector, text, integer, double precision, uuid, text, text[], timestamptz, boolean, timestamptz, timestamptz, text[], text[], tsquery, jsonb)";

export async function installBenchSchema(sql: Sql): Promise<{ derivedFrom: string }> {
  await sql`create schema if not exists bench`;
  const [row] = await sql<{ def: string }[]>`select pg_get_functiondef(${MATCH_SIG}::regprocedure) as def`;
  const def = row?.def;
  if (!def) throw new Error("public.match_memories not found: run the migrations first");
  const iterLine = /SET "?hnsw\.iterative_scan"? TO '[a-z_]+'/;
  const efLine = / *SET "?hnsw\.ef_search"? TO '\d+'\n?/;
  const pathChoice = /v_exact_max := public\.memory_exact_scan_limit\(match_count, v_index\);/;
  for (
    const [what, re] of [["SET hnsw.iterative_scan", iterLine], ["SET hnsw.ef_search", efLine], [
      "the exact-scan path choice (memory_exact_scan_limit)",
      pathChoice,
    ]] as const
  ) {
    if (!re.test(def)) throw new Error(`public.match_memories no longer has ${what}: update bench/benchdb.ts`);
  }
  const variant = (name: string, iterative: string, exactMax: string) =>
    def.replace("FUNCTION public.match_memories(", `FUNCTION bench.${name}(`)
      .replace(efLine, "")
      .replace(iterLine, `SET "hnsw.iterative_scan" TO '${iterative}'`)
      .replace(pathChoice, `v_exact_max := ${exactMax};`);
  // -1: no scope is small enough for the exact path; 2147483646: every scope is.
  await sql.unsafe(variant("match_memories_hnsw_off", "off", "-1"));
  await sql.unsafe(variant("match_memories_hnsw_relaxed", "relaxed_order", "-1"));
  await sql.unsafe(variant("match_memories_exact", "off", "2147483646"));
  await sql.unsafe(`
    create or replace function bench.match_memories_naive(
      query_embedding extensions.vector(512), match_namespace text, match_count int default 15,
      similarity_threshold float default 0.7, match_owner uuid default null)
    returns table (id uuid, content text, similarity float, memory_type text, namespace text, strength float, priority text)
    language plpgsql
    set search_path = public, extensions
    set hnsw.iterative_scan = 'off'
    as $$
    begin
      return query
        select m.id, m.content, 1 - (m.embedding <=> query_embedding) as similarity,
               m.memory_type, m.namespace, m.strength, m.priority
          from devai_memories m
         where m.is_valid = true
           and m.strength > 0.05
           and (match_owner is null or m.owner_id = match_owner)
           and m.namespace like match_namespace || '%'
           and 1 - (m.embedding <=> query_embedding) > similarity_threshold
         order by m.embedding <=> query_embedding
         limit match_count;
    end; $$`);
  await sql.unsafe(`
    create or replace function bench.timed_match(
      fn text, query_embedding extensions.vector(512), match_namespace text, match_count int,
      similarity_threshold float, match_owner uuid, match_namespaces text[])
    returns table (ms double precision, n bigint)
    language plpgsql
    set search_path = ''
    as $$
    declare t0 timestamptz; c bigint;
    begin
      t0 := clock_timestamp();
      if fn = 'naive' then
        select count(*) into c from bench.match_memories_naive(query_embedding, match_namespace, match_count, similarity_threshold, match_owner);
      else
        select count(*) into c from public.match_memories(query_embedding, match_namespace, match_count, similarity_threshold, match_owner, 'text-embedding-3-small', match_namespaces);
      end if;
      return query select (extract(epoch from clock_timestamp() - t0) * 1000)::float8, c;
    end; $$`);
  await sql.unsafe(`grant usage on schema bench to authenticated, service_role`);
  await sql.unsafe(`grant execute on all functions in schema bench to authenticated, service_role`);
  return { derivedFrom: MATCH_SIG };
}

/** Runs fn in a transaction as the tenant, exactly as the edge functions do (RLS applies). */
export async function asTenant<T>(
  sql: Sql,
  tenantId: string,
  fn: (tx: postgres.TransactionSql) => Promise<T>,
  settings: Record<string, string> = {},
): Promise<T> {
  const out = await sql.begin(async (tx) => {
    // The service's own settings (db.ts tenantItem: role, claims, its mark), `settings` with them.
    await tx`select 1 from ${tenantItem(tx as never, tenantId, settings)}`;
    return await fn(tx);
  });
  return out as T;
}

/**
 * Runs fn with one of public.memory_settings at value, restored after. A suite that sends one
 * tenant's requests back to back turns that tenant's read rate limit off this way
 * (rate_limit_read_per_minute 0): at 10k rows they outrun its burst and would be answered 429.
 */
export async function withSetting<T>(sql: Sql, name: string, value: number, fn: () => Promise<T>): Promise<T> {
  const [before] = await sql<{ value: string }[]>`select value::text from public.memory_settings where name = ${name}`;
  await sql`update public.memory_settings set value = ${value} where name = ${name}`;
  try {
    return await fn();
  } finally {
    if (before) await sql`update public.memory_settings set value = ${before.value}::numeric where name = ${name}`;
  }
}

export async function versions(sql: Sql): Promise<{ postgres: string; pgvector: string }> {
  const [r] = await sql<{ pg: string; vector: string | null }[]>`
    select current_setting('server_version') as pg,
           (select extversion from pg_extension where extname = 'vector') as vector`;
  return { postgres: r?.pg ?? "?", pgvector: r?.vector ?? "?" };
}

export async function serverSettings(sql: Sql): Promise<Record<string, string>> {
  const names = [
    "shared_buffers",
    "work_mem",
    "maintenance_work_mem",
    "max_parallel_workers_per_gather",
    "max_parallel_maintenance_workers",
    "effective_cache_size",
    "hnsw.ef_search",
    "hnsw.iterative_scan",
    "hnsw.max_scan_tuples",
    "hnsw.scan_mem_multiplier",
    "jit",
    "synchronous_commit",
  ];
  const rows = await sql<{ name: string; setting: string }[]>`
    select n as name, coalesce(current_setting(n, true), '(unset)') as setting from unnest(${names}::text[]) as n`;
  return Object.fromEntries(rows.map((r) => [r.name, r.setting]));
}

/**
 * Pauses the schedules the migrations set up (pg_cron's devai-* jobs) for the bench's run: the
 * nightly steps run every minute of their hour (decay at 03:00, TTL at 04:00, purge at 05:00 UTC),
 * so a run in those hours shared the CPU with them and a purge hour removed the corpus's expired
 * memories under it. The lifecycle suite calls the jobs' functions itself. Resolves to a function
 * that resumes exactly the jobs it paused.
 */
export async function pauseScheduledJobs(sql: Sql): Promise<() => Promise<void>> {
  const [cron] = await sql<{ present: boolean }[]>`select to_regclass('cron.job') is not null as present`;
  if (!cron?.present) return () => Promise.resolve();
  const paused = await sql<{ jobid: number }[]>`
    update cron.job set active = false where active and jobname like 'devai-%' returning jobid`;
  const ids = paused.map((j) => j.jobid);
  return async () => {
    if (ids.length > 0) await sql`update cron.job set active = true where jobid = any (${ids}::bigint[])`;
  };
}
