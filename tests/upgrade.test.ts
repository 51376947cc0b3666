// Upgrading a deployment: a database made by an older release, with data its service wrote, takes
// today's migrations with `supabase db push` (each pending file once, as a user runs it) and then
// serves today's functions with nothing lost (docs/upgrading.md). On a throwaway cluster of its own
// (scripts/db.sh on DEVAI_TEST_UPGRADE_PG_PORT, default 24353): the migrations up to CUTOFF
// (DEVAI_MIGRATIONS_UNTIL), the hand-written fixture tests/fixtures/upgrade/<CUTOFF>.sql, the rest
// of the migrations, then checks through the local functions server. No git history is read.
// Before that, on the same cluster, a fresh install: the repair migration (REPAIR) changes nothing
// there and locks no table a request writes, and what the fresh install registers (pg_cron's jobs,
// settings, maintenance schedules) is what the upgraded database must have too.
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { createSql, type Sql, toVectorLiteral } from "../supabase/functions/_shared/db.ts";
import { localEmbedder } from "../supabase/functions/_shared/embeddings.ts";
import { serviceToken, userHeaders } from "./support/auth.ts";
import { realServerOnly } from "./support/backend.ts";
import { dbScript } from "./support/db-script.ts";
import { functionJson, type RunningServer, startTestServer } from "./support/http_server.ts";
import { testPort } from "./support/ports.ts";
import { waitUntil } from "./support/wait.ts";

const REPO = fileURLToPath(new URL("..", import.meta.url));
/** The release the fixture was written for: main as of this migration (2026-11-27). */
const CUTOFF = "20261128925000";
/** The migration that restates what edited migrations left behind on an upgraded database. */
const REPAIR = "20261129200000_repair_objects_of_migrations_edited_after_release.sql";
const PORT = testPort("DEVAI_TEST_UPGRADE_PG_PORT");
const URL_ = `postgresql://postgres@127.0.0.1:${PORT}/postgres`;
const WHY = "builds an older release's schema on a Postgres 17 cluster of its own (scripts/db.sh, pg_cron)";
const A = "00000000-0000-4000-8000-0000000000a1";
const B = "00000000-0000-4000-8000-0000000000b2";
const AGENT_TOKEN = "dvm_upgradefixturetoken0000000000000000000000";
const OLD = {
  pinned: "10000000-0000-4000-8000-000000000001",
  superseded: "10000000-0000-4000-8000-000000000002",
  sqitch: "10000000-0000-4000-8000-000000000004",
  parser: "10000000-0000-4000-8000-000000000005",
  forgotten: "10000000-0000-4000-8000-000000000006",
  correction: "10000000-0000-4000-8000-000000000007",
  /** Written before graph memory existed: no entity links until the upgrade's entity pass. */
  unlinked: "10000000-0000-4000-8000-000000000008",
  unlinkedB: "20000000-0000-4000-8000-000000000003",
};

async function run(cmd: string, args: string[], env: Record<string, string> = {}): Promise<string> {
  const out = await new Deno.Command(cmd, {
    args,
    cwd: REPO,
    env: { ...env, DATABASE_URL: "" },
    stdout: "piped",
    stderr: "piped",
  })
    .output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  assert.ok(out.success, `${cmd} ${args.join(" ")}:\n${text}`);
  return text;
}

/** What an upgrade must keep: every memory's row as the API shows it, and every history row. */
async function snapshot(sql: Sql) {
  const memories = await sql`
    select id, owner_id, content, state, is_valid, superseded_by, pinned, fts is not null as has_fts,
           embedding is not null as has_embedding, embedding_model
      from public.devai_memories order by id`;
  const history = await sql`select id, memory_id, event from public.memory_history order by id`;
  const tables = await sql`
    select (select count(*)::int from public.memory_relations) as relations,
           (select count(*)::int from public.memory_entity_links) as links,
           (select count(*)::int from public.memory_agent_tokens) as tokens,
           (select count(*)::int from public.supervisor_checkpoints) as checkpoints`;
  return { memories: [...memories], history: [...history], tables: tables[0] };
}

/** The settings' rows: later migrations add settings, and keep each one's value. */
/** Defaults a migration after the cutoff changed, for rows still at the old value. */
const MOVED_DEFAULTS = new Map([["fusion_score_share", { from: "0", to: "0.5" }]]);

async function settings(sql: Sql): Promise<Map<string, string>> {
  const rows = await sql<{ name: string; value: string }[]>`select name, value::text from public.memory_settings`;
  return new Map(rows.map((r) => [r.name, r.value]));
}

/** The schema objects the repair restates, as the catalogs define them (no OIDs). */
async function catalog(sql: Sql) {
  const ours = sql`
    select n.oid from pg_catalog.pg_namespace n
     where n.nspname not in ('pg_catalog', 'information_schema', 'pg_toast', 'extensions', 'cron')`;
  const functions = await sql`
    select p.oid::regprocedure::text as name, pg_catalog.pg_get_functiondef(p.oid) as def, p.proacl::text as acl,
           pg_catalog.obj_description(p.oid, 'pg_proc') as comment
      from pg_catalog.pg_proc p
     where p.pronamespace in (${ours}) and p.prokind in ('f', 'p')
       and not exists (select from pg_catalog.pg_depend d where d.objid = p.oid and d.deptype = 'e')
     order by 1`;
  const triggers = await sql`
    select t.tgrelid::regclass::text as rel, t.tgname, pg_catalog.pg_get_triggerdef(t.oid) as def, t.tgenabled
      from pg_catalog.pg_trigger t where not t.tgisinternal order by 1, 2`;
  const constraints = await sql`
    select c.conrelid::regclass::text as rel, c.conname, pg_catalog.pg_get_constraintdef(c.oid) as def, c.convalidated
      from pg_catalog.pg_constraint c where c.connamespace in (${ours}) order by 1, 2, 3`;
  const indexes = await sql`
    select schemaname, indexname, indexdef from pg_catalog.pg_indexes
     where schemaname not in ('pg_catalog', 'information_schema', 'pg_toast', 'cron') order by 1, 2`;
  return { functions: [...functions], triggers: [...triggers], constraints: [...constraints], indexes: [...indexes] };
}

/** What the migrations register besides the schema: pg_cron's jobs, the settings, the schedules. */
async function registered(sql: Sql) {
  const cron = await sql`select jobname, schedule, command, username, active from cron.job order by jobname`;
  const settings = await sql`select name, value::text, description from public.memory_settings order by name`;
  const schedules = await sql`select * from public.memory_maintenance_schedules order by job_name`;
  return { cron: [...cron], settings: [...settings], schedules: [...schedules] };
}

/**
 * pg_cron runs no job on the test's cluster: a sweep or prune running at a minute's start would
 * change the fixture's jobs and rows between the snapshots (cron.job is left as the migrations
 * made it, so it can be compared).
 */
async function pauseCron(sql: Sql, paused: boolean) {
  await sql.unsafe(`alter system ${paused ? "set cron.launch_active_jobs = off" : "reset cron.launch_active_jobs"}`);
  await sql`select pg_catalog.pg_reload_conf()`;
}

/** The upgrade as a user runs it (docs/upgrading.md): the pending migrations, each once. */
async function push() {
  await run("node_modules/.bin/supabase", ["db", "push", `--remote=${URL_}`, "--yes"]);
}

Deno.test({
  ...realServerOnly(
    `upgrade: a deployment of migration ${CUTOFF} with data takes today's migrations (db push) and today's functions serve its data`,
    WHY,
  ),
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async (t) => {
    let sql: Sql | undefined;
    let server: RunningServer | undefined;
    try {
      const migrations = [...Deno.readDirSync(`${REPO}/supabase/migrations`)].map((e) => e.name).sort();
      const beforeRepair = migrations[migrations.indexOf(REPAIR) - 1]!.slice(0, 14);
      let fresh: Awaited<ReturnType<typeof registered>> | undefined;
      await t.step("fresh install: the repair changes nothing and locks no table a request writes", async () => {
        await dbScript("reset", { DEVAI_PG_PORT: String(PORT), DEVAI_MIGRATIONS_UNTIL: beforeRepair });
        sql = createSql(URL_, { max: 2, applicationName: "devai-memory-upgrade-test" });
        await pauseCron(sql, true);
        const before = await catalog(sql);
        // The repair in a transaction of its own (as db push runs it), its locks read before the end.
        const text = await Deno.readTextFile(`${REPO}/supabase/migrations/${REPAIR}`);
        const { after, locks } = await sql.begin(async (tx) => {
          await tx.unsafe(text);
          const locks = await tx<{ rel: string; mode: string }[]>`
            select c.relname as rel, l.mode from pg_catalog.pg_locks l
              join pg_catalog.pg_class c on c.oid = l.relation
             where l.pid = pg_catalog.pg_backend_pid() and l.locktype = 'relation'
               and c.relnamespace = 'public'::regnamespace and c.relkind in ('r', 'p')
             order by 1, 2`;
          const after = await catalog(tx as unknown as Sql);
          await tx`rollback and chain`; // leave the database as the migrations before the repair made it
          return { after, locks: [...locks] };
        });
        // Then the rest, as a fresh install takes them: what it registers is the upgrade's reference.
        await push();
        fresh = await registered(sql);
        // Reading a table (the SQL functions' bodies are parsed) blocks no request; writing one does.
        assert.deepEqual(locks.filter((l) => l.mode !== "AccessShareLock"), [], JSON.stringify(locks));
        for (const table of ["devai_memories", "memory_settings"]) {
          assert.ok(!locks.some((l) => l.rel === table), `no lock on ${table}: ${JSON.stringify(locks)}`);
        }
        assert.deepEqual(after, before, "the repair changed no function, trigger, constraint or index");
        await sql.end();
        sql = undefined;
      });
      await t.step(`upgrade from ${CUTOFF}`, async () => {
        await dbScript("reset", { DEVAI_PG_PORT: String(PORT), DEVAI_MIGRATIONS_UNTIL: CUTOFF });
        sql = createSql(URL_, { max: 2, applicationName: "devai-memory-upgrade-test" });
        assert.ok(fresh, "the fresh install was made");
        await upgrade(sql, fresh, (s) => server = s);
      });
    } finally {
      await server?.close();
      if (sql) await pauseCron(sql, false).catch(() => {});
      await sql?.end();
      await dbScript("stop", { DEVAI_PG_PORT: String(PORT) });
    }
  },
});

/** The upgrade itself, on a cluster that the migrations up to CUTOFF made. */
async function upgrade(sql: Sql, fresh: Awaited<ReturnType<typeof registered>>, serving: (s: RunningServer) => void) {
  await pauseCron(sql, true);
  // The old release's data, and the vectors its service stored (the local embedder's).
  await sql.unsafe(await Deno.readTextFile(`${REPO}/tests/fixtures/upgrade/${CUTOFF}.sql`));
  const embedder = localEmbedder();
  for (const m of await sql<{ id: string; content: string }[]>`select id, content from public.devai_memories`) {
    const [vector] = await embedder.embed([m.content]);
    await sql`update public.devai_memories set embedding = ${toVectorLiteral(vector!)}::extensions.vector,
                  embedding_model = ${embedder.model} where id = ${m.id}`;
  }
  const before = await snapshot(sql);
  const settingsBefore = await settings(sql);
  const cronBefore = await sql<{ jobname: string }[]>`select jobname from cron.job order by 1`;

  // The upgrade as a user runs it: the pending migrations, each once, without --include-all.
  await push();

  // The schema is what a fresh install makes (supabase/schema.sql, which scripts/test.sh checks
  // against one): nothing an edited migration left behind.
  await run("bash", ["scripts/db.sh", "schema-snapshot", "--check"], { DEVAI_PG_PORT: String(PORT) });

  const after = await snapshot(sql);
  assert.deepEqual(after, before, "the upgrade changed no memory, history row or count");
  const settingsAfter = await settings(sql);
  // A setting keeps its value, unless it is still at a default a later migration moved (only
  // those rows move: 20261205100000 fusion_score_share 0 -> 0.5); the fixture's is the old default.
  assert.equal(settingsBefore.get("fusion_score_share"), "0", "the old release's fusion_score_share");
  for (const [name, value] of settingsBefore) {
    const moved = MOVED_DEFAULTS.get(name);
    const expected = moved && moved.from === value ? moved.to : value;
    assert.equal(settingsAfter.get(name), expected, `setting ${name} kept (or moved from its old default)`);
  }
  const cron = await sql<{ jobname: string; n: number }[]>`
      select jobname, count(*)::int as n from cron.job group by 1 order by 1`;
  assert.deepEqual(cron.filter((j) => j.n !== 1), [], "each schedule registered once");
  for (const { jobname } of cronBefore) assert.ok(cron.some((j) => j.jobname === jobname), `${jobname} kept`);
  // pg_cron's jobs, the settings and the maintenance schedules are a fresh install's.
  assert.deepEqual(await registered(sql), fresh, "cron jobs, settings and schedules as a fresh install has them");

  const server = await startTestServer({ databaseUrl: URL_, worker: false });
  serving(server);
  const asA = await userHeaders(A);

  // Old memories: found by retrieval (keyword and vector), explained, exported, listed.
  const found = await functionJson(server, "memory-retrieve", asA, {
    message: "blue-green releases on Fridays",
    project: "demo",
  });
  assert.equal(found.status, 200, JSON.stringify(found.body));
  const hit = found.body.memories.find((m: { id: string }) => m.id === OLD.pinned);
  assert.ok(hit, `the old memory is retrieved: ${JSON.stringify(found.body.memories)}`);
  assert.ok(!found.body.memories.some((m: { id: string }) => m.id.startsWith("2")), "tenant B's stay out");
  const explained = await functionJson(server, `memory/${OLD.parser}/explain`, asA);
  assert.equal(explained.status, 200, JSON.stringify(explained.body));
  const exported = await functionJson(server, "memory/export?format=json", asA);
  assert.equal(exported.status, 200);
  assert.equal(exported.body.memories.length, before.memories.filter((m) => m.owner_id === A).length);
  const history = await functionJson(server, `memory/${OLD.superseded}/history`, asA);
  assert.equal(history.status, 200);
  assert.deepEqual(
    history.body.history.map((h: { id: string }) => h.id).sort(),
    before.history.filter((h) => h.memory_id === OLD.superseded).map((h) => h.id).sort(),
  );

  // New writes on old rows: correct, forget and restore (500 before 20261129200000: the
  // change-log helper of 20261123000700's first text).
  const corrected = await functionJson(server, `memory/${OLD.sqitch}/correct`, asA, {
    content: "Database migrations live in db/migrations and run with dbmate",
  });
  assert.equal(corrected.status, 201, JSON.stringify(corrected.body));
  const forgotten = await functionJson(server, `memory/${OLD.parser}/forget`, asA, {});
  assert.equal(forgotten.status, 200, JSON.stringify(forgotten.body));
  const restored = await functionJson(server, `memory/${OLD.forgotten}/restore`, asA, {});
  assert.equal(restored.status, 200, JSON.stringify(restored.body));

  // Extraction and usage, through the functions 20261128990000 guards (500 before
  // 20261129200000: memory_private.require_the_service missing).
  const extract = await functionJson(server, "memory-extract", asA, {
    session_id: "after-upgrade",
    project: "demo",
    messages: [{ role: "user", content: "remember that the deploy key rotates monthly" }],
  });
  assert.equal(extract.status, 202, JSON.stringify(extract.body));
  const usage = await functionJson(server, "memory/usage", asA, {
    session_id: "after-upgrade",
    retrieved: [OLD.pinned],
  });
  assert.equal(usage.status, 200, JSON.stringify(usage.body));

  // The old agent token still authenticates; the old checkpoint is read.
  const byToken = await functionJson(server, "memory/checkpoints/thread-1", {
    authorization: `Bearer ${AGENT_TOKEN}`,
  });
  assert.equal(byToken.status, 200, JSON.stringify(byToken.body));
  assert.deepEqual(byToken.body.state, { step: 3, todo: ["a", "b"] });

  // One memory a batch: tenant A's 7 unlinked memories take 7 jobs, each queueing the next.
  await sql`update public.memory_settings set value = 1 where name = 'entity_backfill_batch_size'`;
  // db push queued no entity_backfill job: until the new functions are deployed the old worker
  // would claim it and kill it (a kind it does not know). devai-entity-backfill queues them, as
  // pg_cron runs it every 10 minutes, and queues again a tenant whose job the old worker killed.
  const [early] = await sql<{ n: number }[]>`
    select count(*)::int as n from public.memory_jobs where kind = 'entity_backfill'`;
  assert.equal(early!.n, 0, "the migration queues no entity_backfill job");
  const [schedule] = await sql<{ command: string }[]>`
    select command from public.memory_maintenance_schedules where job_name = 'devai-entity-backfill'`;
  const scheduled = async () => (await sql.unsafe(schedule!.command))[0]!.enqueue_entity_backfill as number;
  assert.equal(await scheduled(), 2, "one job for tenant A, one for B");
  const killed = await sql`
    update public.memory_jobs set status = 'dead', attempts = 1, finished_at = now(), locked_by = null,
           locked_until = null, last_error = 'unknown background job kind ''entity_backfill'''
     where kind = 'entity_backfill' and status = 'queued' returning id`;
  assert.equal(killed.length, 2, "as the old worker kills them");
  assert.equal(await scheduled(), 2, "the schedule's next run queues both tenants again");
  // Jobs the old worker queued or held (its lease run out) are run by today's worker.
  const worker = async () =>
    await functionJson(server, "memory-worker", { authorization: `Bearer ${await serviceToken()}` }, { max_jobs: 30 });
  const drained = await worker();
  assert.equal(drained.status, 200, JSON.stringify(drained.body));
  // The extract call's in-process kick may still hold some: drained until none is queued or running.
  await waitUntil(
    async () => {
      const [busy] = await sql<{ n: number }[]>`
      select count(*)::int as n from public.memory_jobs where status in ('queued', 'running')`;
      if (busy!.n === 0) return true;
      await worker();
      return false;
    },
    "every job done",
    { pollMs: 50 },
  );
  const jobs = await sql<{ id: string; status: string }[]>`
      select id, status from public.memory_jobs where idempotency_key like 'fixture-%' order by id`;
  assert.deepEqual(jobs.map((j) => j.status), ["done", "done"], JSON.stringify(jobs));
  const [b] = await sql<{ n: number }[]>`
      select count(*)::int as n from public.devai_memories
       where owner_id = ${B} and content = 'Tenant B builds run on Node 22 in CI'`;
  assert.equal(b!.n, 1, "the job held by the dead worker wrote its memory once");

  // Memories never linked to entities got their entity pass from the jobs the schedule queued
  // (one per tenant): linked as a new memory is (rules, cited files), then found by entity.
  const linksOf = async (id: string) =>
    (await sql<{ name: string; source: string }[]>`
      select e.canonical_name as name, l.source from public.memory_entity_links l
        join public.memory_entities e on e.id = l.entity_id where l.memory_id = ${id} order by 1`)
      .map((l) => `${l.name}:${l.source}`);
  assert.deepEqual(await linksOf(OLD.unlinked), ["src/net/backoff.ts:api", "src/net/retry.ts:rules"]);
  assert.deepEqual(await linksOf(OLD.unlinkedB), ["config/app.yaml:rules"]);
  const backfills = await sql<{ owner_id: string; n: number }[]>`
    select owner_id, count(*)::int as n from public.memory_jobs
     where kind = 'entity_backfill' and status = 'done' group by 1 order by 1`;
  assert.deepEqual(backfills.map((j) => j.n), [7, 3], "a job a batch, until each tenant's last");
  const entities = await functionJson(server, "memory/entities?q=src/net/retry.ts", asA);
  assert.equal(entities.status, 200, JSON.stringify(entities.body));
  const [retry] = entities.body.entities;
  assert.equal(retry?.canonical_name, "src/net/retry.ts", JSON.stringify(entities.body));
  const profile = await functionJson(server, `memory/entities/${retry.id}`, asA);
  assert.equal(profile.status, 200, JSON.stringify(profile.body));
  assert.deepEqual(profile.body.facts.map((f: { id: string }) => f.id), [OLD.unlinked]);
  // The graph signal: a who question looks the file up as an entity and reaches the memory.
  const who = await functionJson(server, "memory-retrieve", asA, {
    message: "who owns src/net/retry.ts",
    project: "demo",
    threshold: 0,
  });
  assert.equal(who.status, 200, JSON.stringify(who.body));
  assert.equal(who.body.search.intent, "who");
  const viaGraph = who.body.memories.find((m: { id: string }) => m.id === OLD.unlinked);
  assert.deepEqual(viaGraph?.signals.graph, { rank: 1, via: retry.id, edge: "entity" }, JSON.stringify(who.body));
  const notB = await functionJson(server, "memory/entities?q=config/app.yaml", asA);
  assert.deepEqual(notB.body.entities, [], "tenant B's entity stays B's");

  // Done once: the pass set is empty, and queueing again or draining again links nothing.
  const links = async () =>
    (await sql<{ n: number }[]>`select count(*)::int as n from public.memory_entity_links`)[0]!.n;
  const linked = await links();
  const [again] = await sql<{ n: number }[]>`select memory_private.enqueue_entity_backfill() as n`;
  assert.equal(again!.n, 0, "nothing left to queue");
  const rerun = await worker();
  assert.equal(rerun.status, 200, JSON.stringify(rerun.body));
  assert.equal(await links(), linked, "a second run links nothing");
}
