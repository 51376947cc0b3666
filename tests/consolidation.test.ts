// POST memory/consolidate (the nightly consolidation, run now) end to end on a realistic tenant,
// with the fake LLM through the real openai SDK: duplicates reduced (near-verbatim ones without a
// model, rephrasings by the judge), a version bump superseded, a contradiction recorded, the
// user-stated memory never merged away, every change audited by 'consolidation'; a dry run that
// writes nothing and announces what the real run then does; no LLM: only the deterministic parts;
// one run at a time.
import assert from "node:assert/strict";
import { withTenant } from "../supabase/functions/_shared/db.ts";
import { newTenant, tenantWrites } from "./support/seed.ts";
import {
  judgedPairs,
  LOCAL_EMBEDDING,
  memoryWithLlm,
  scriptJudge,
  seedRealisticTenant,
} from "./support/consolidation.ts";
import { writeEnv } from "./write_helpers.ts";
import { createLlm } from "../supabase/functions/_shared/llm.ts";
import { reply } from "./fake_openai.ts";
import { ManualClock } from "./support/clock.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };

async function validContents(sql: import("../supabase/functions/_shared/db.ts").Sql, t: string): Promise<string[]> {
  return (await sql<{ content: string }[]>`
    select content from public.devai_memories where owner_id = ${t} and is_valid and state = 'active' order by content`)
    .map((r) => r.content);
}

Deno.test({
  name: "consolidate: a realistic tenant's duplicates are reduced, the user's words kept, every change audited",
  ...opts,
}, async () => {
  const env = await writeEnv({ config: { embedding: LOCAL_EMBEDDING } as never });
  try {
    const t = newTenant();
    const ids = await seedRealisticTenant(env.sql, t);
    scriptJudge(env.fake);
    const api = memoryWithLlm(env.sql, env.config, env.llm, env.embedder);

    const res = await api("POST", "/memory/consolidate", t, {});
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const r = res.body;
    assert.equal(r.dry_run, false);
    assert.equal(r.llm, "used");
    // Exact restatements merge without a model: the pnpm pair (into the user's own words) and the vitest pair.
    assert.equal(r.deduped, 2);
    // Rephrasings (pnpm ×2, deploys, port) merged by the judge, Node 18 superseded by Node 20.
    assert.equal(r.merged, 5);
    assert.equal(r.contradictions_found, 1);
    assert.ok(r.pairs_checked > 0 && r.pairs_checked <= 50);
    assert.ok(r.tokens_used > 0);
    assert.equal(r.forgotten, 0);

    // 15 memories of 7 facts → 8 valid: one per fact, and both sides of the open contradiction.
    const valid = await validContents(env.sql, t);
    assert.equal(valid.length, 8, valid.join("\n"));
    for (
      const kept of [
        "CI runs on Node 20.",
        "Code review needs two approvals before merge.",
        "The project uses pnpm for installs",
        "The user prefers spaces over tabs.",
        "The user prefers tabs over spaces.",
      ]
    ) assert.ok(valid.includes(kept), kept);
    for (const fact of ["Deploys", "Tests", "The API server"]) {
      assert.equal(valid.filter((c) => c.startsWith(fact)).length, 1, fact);
    }
    // The user-stated restatement survived; the model's copies are superseded by it, softly.
    const [pnpm] = await env.sql<
      { source: string; is_valid: boolean }[]
    >`select source, is_valid from public.devai_memories where id = ${ids[1]!}`;
    assert.deepEqual({ ...pnpm }, { source: "user_stated", is_valid: true });
    const superseded = await env.sql<{ id: string; superseded_by: string | null; valid_until: Date | null }[]>`
      select id, superseded_by, valid_until from public.devai_memories where id = any (${[
      ids[0]!,
      ids[2]!,
      ids[3]!,
    ]}::uuid[])`;
    assert.deepEqual(
      superseded.map((m) => [m.superseded_by, m.valid_until !== null]),
      [[ids[1], true], [ids[1], true], [ids[1], true]],
      "the three pnpm copies are kept, pointing at the user's statement, validity closed",
    );
    const [node18] = await env.sql<
      { superseded_by: string }[]
    >`select superseded_by from public.devai_memories where id = ${ids[6]!}`;
    assert.equal(node18!.superseded_by, ids[7]);

    // Audited: a MERGE by consolidation for each of the 7 memories merged away, a supersedes edge to each.
    const history = await env.sql<{ n: number }[]>`
      select count(*)::int as n from public.memory_history where owner_id = ${t} and event = 'MERGE' and actor = 'consolidation'`;
    assert.equal(history[0]!.n, 7);
    const edges = await env.sql<{ n: number }[]>`
      select count(*)::int as n from public.memory_relations where owner_id = ${t} and relation_type = 'supersedes'`;
    assert.equal(edges[0]!.n, 7);

    // The contradiction is open, the older (user-stated) as a, the newer as b; readable by the API.
    const open = await api("GET", "/memory/contradictions?status=open", t);
    assert.equal(open.status, 200);
    assert.deepEqual(
      open.body.contradictions.map((
        c: { memory_a: { id: string }; memory_b: { id: string }; detected_by: string },
      ) => [c.memory_a.id, c.memory_b.id, c.detected_by]),
      [[ids[10], ids[11], "consolidation"]],
    );

    // The run is recorded with what it spent; an insight run is queued for after it.
    const [run] = await env
      .sql`select trigger, finished_at, pairs_checked, tokens_used from public.memory_consolidation_runs where owner_id = ${t}`;
    assert.equal(run!.trigger, "api");
    assert.ok(run!.finished_at);
    assert.equal(run!.pairs_checked, r.pairs_checked);
    const jobs = await env.sql<{ kind: string }[]>`select kind from public.memory_jobs where owner_id = ${t}`;
    assert.deepEqual(jobs.map((j) => j.kind), ["insight"]);
    // The model never saw an id, in prompts that do show it the memories.
    const shown = JSON.stringify(env.fake.chatRequests().map((q) => q.body.messages));
    assert.ok(shown.includes("CI runs on Node 20."), "the prompts carry the memories' text");
    assert.ok(!shown.match(/[0-9a-f]{8}-[0-9a-f]{4}-/));
  } finally {
    await env.close();
  }
});

Deno.test({
  name:
    "consolidate dry_run: writes nothing but its run's record (what it spent), and announces what the real run then does",
  ...opts,
}, async () => {
  const env = await writeEnv({ config: { embedding: LOCAL_EMBEDDING } as never });
  try {
    const t = newTenant();
    await seedRealisticTenant(env.sql, t);
    scriptJudge(env.fake);
    const api = memoryWithLlm(env.sql, env.config, env.llm, env.embedder);
    const snapshot = async () => {
      const [other] = await env.sql`
        select (select count(*)::int from public.memory_consolidation_runs where owner_id = ${t} and not dry_run) as runs,
               (select count(*)::int from public.memory_pair_checks where owner_id = ${t}) as fingerprints,
               (select count(*)::int from public.memory_contradictions where owner_id = ${t}) as contradictions,
               (select count(*)::int from public.memory_relations where owner_id = ${t}) as relations,
               (select count(*)::int from public.memory_jobs where owner_id = ${t}) as jobs,
               (select count(*)::int from public.devai_memories where owner_id = ${t} and is_valid) as valid,
               (select count(*)::int from public.memory_change_log where owner_id = ${t}) as change_log`;
      return { ...await tenantWrites(env.sql, t), ...other };
    };
    const before = await snapshot();
    const dry = await api("POST", "/memory/consolidate", t, { dry_run: true });
    assert.equal(dry.status, 200);
    assert.equal(dry.body.dry_run, true);
    assert.deepEqual(await snapshot(), before, "a dry run writes nothing but its run's record");
    const [record] = await env
      .sql`select id, dry_run, pairs_checked, tokens_used, finished_at is not null as finished from public.memory_consolidation_runs where owner_id = ${t}`;
    assert.deepEqual(record, {
      id: dry.body.run_id,
      dry_run: true,
      pairs_checked: dry.body.pairs_checked,
      tokens_used: dry.body.tokens_used,
      finished: true,
    });
    assert.ok(dry.body.tokens_used > 0, "the dry run asked the model: its tokens count against the day's caps");

    const real = await api("POST", "/memory/consolidate", t, {});
    const pick = (b: Record<string, unknown>) => ({
      deduped: b.deduped,
      merged: b.merged,
      contradictions_found: b.contradictions_found,
      pairs_checked: b.pairs_checked,
      forgotten: b.forgotten,
    });
    assert.deepEqual(pick(real.body), pick(dry.body), "the dry run announced what the real run did");
    assert.notDeepEqual(await snapshot(), before);
  } finally {
    await env.close();
  }
});

Deno.test({
  name: "consolidate without an LLM: near-verbatim duplicates still merge, the model's part is skipped cleanly",
  ...opts,
}, async () => {
  const env = await writeEnv({ config: { embedding: LOCAL_EMBEDDING } as never, withLlm: false });
  try {
    const t = newTenant();
    const ids = await seedRealisticTenant(env.sql, t);
    const api = memoryWithLlm(env.sql, env.config, undefined, env.embedder);
    const res = await api("POST", "/memory/consolidate", t, {});
    assert.equal(res.status, 200);
    assert.equal(res.body.llm, "skipped: no LLM configured");
    assert.deepEqual([
      res.body.deduped,
      res.body.merged,
      res.body.pairs_checked,
      res.body.tokens_used,
      res.body.contradictions_found,
    ], [2, 0, 0, 0, 0]);
    assert.equal(env.fake.chatRequests().length, 0);
    const [pnpm] = await env.sql<
      { superseded_by: string }[]
    >`select superseded_by from public.devai_memories where id = ${ids[0]!}`;
    assert.equal(pnpm!.superseded_by, ids[1], "the model's copy merged into the user's restatement");
    const jobs = await env.sql`select 1 from public.memory_jobs where owner_id = ${t}`;
    assert.equal(jobs.length, 0, "no insight run without a model");
  } finally {
    await env.close();
  }
});

Deno.test({
  name: "consolidate: a model that hangs is cut within the drain's budget; the run answers without it",
  ...opts,
}, async () => {
  // A model request may take 60 s (LLM_TIMEOUT_MS's default) and is retried 3 times: a provider
  // that hangs held the request about 4 minutes, past a hosted function's 150 s. The budget here is
  // the smallest allowed (10 s: requests cut at 7.5 s), on a clock the test moves to the cut once the
  // fake provider has the request (before, the test waited 7.5 s of wall time).
  const env = await writeEnv({ config: { embedding: LOCAL_EMBEDDING } as never });
  try {
    const config = { ...env.config, workerDrainBudgetMs: 10_000, llm: { ...env.config.llm, timeoutMs: 60_000 } };
    const llm = createLlm(config, { retry: { baseDelayMs: 5 } })!;
    const t = newTenant();
    const ids = await seedRealisticTenant(env.sql, t);
    env.fake.onChat(() => true, reply.hang());
    const deadlineClock = new ManualClock();
    const api = memoryWithLlm(env.sql, config, llm, env.embedder, undefined, deadlineClock);
    const answered = api("POST", "/memory/consolidate", t, {});
    await Promise.race([env.fake.chatRequestsReceived(1), answered]);
    assert.equal(deadlineClock.toNextTimer(), 7_500, "cut at the budget less its reserve");
    const res = await answered;
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.match(res.body.llm, /^failed: DrainCutError/);
    assert.equal(env.fake.chatRequests().length, 1, "the hung request, cut; no retry after the cut");
    assert.equal(res.body.deduped, 2, "near-verbatim duplicates merged without the model");
    const [pnpm] = await env.sql<{ superseded_by: string }[]>`
      select superseded_by from public.devai_memories where id = ${ids[0]!}`;
    assert.equal(pnpm!.superseded_by, ids[1]);
  } finally {
    await env.close();
  }
});

Deno.test({
  name: "consolidate: one run of a tenant at a time (409); a run left over an hour by a dead worker is closed",
  ...opts,
}, async () => {
  const env = await writeEnv({ config: { embedding: LOCAL_EMBEDDING } as never, withLlm: false });
  try {
    const t = newTenant();
    await seedRealisticTenant(env.sql, t);
    const api = memoryWithLlm(env.sql, env.config, undefined, env.embedder);
    const [running] = await withTenant(
      env.sql,
      { tenantId: t, actor: "test" },
      (tx) =>
        tx<
          { id: string }[]
        >`insert into public.memory_consolidation_runs (owner_id, trigger) values (${t}, 'nightly') returning id`,
    );
    const busy = await api("POST", "/memory/consolidate", t, {});
    assert.equal(busy.status, 409);
    assert.equal(busy.body.error.code, "consolidation_running");
    assert.equal(
      (await api("POST", "/memory/consolidate", t, { dry_run: true })).status,
      409,
      "a dry run waits its turn too",
    );
    assert.equal((await api("POST", "/memory/consolidate", t, { dry_run: "yes" })).status, 400);
    assert.equal((await api("POST", "/memory/consolidate", t, { force: true })).status, 400);

    await env.sql`update public.memory_consolidation_runs set started_at = now() - interval '2 hours' where id = ${
      running!.id
    }`;
    const res = await api("POST", "/memory/consolidate", t, {});
    assert.equal(res.status, 200);
    const [stale] = await env.sql`select finished_at, result from public.memory_consolidation_runs where id = ${
      running!.id
    }`;
    assert.ok(stale!.finished_at);
    assert.deepEqual(stale!.result, { abandoned: true });
  } finally {
    await env.close();
  }
});

Deno.test({
  name: "consolidate: tenants are isolated; the judge is shown each pair once, never another tenant's memory",
  ...opts,
}, async () => {
  const env = await writeEnv({ config: { embedding: LOCAL_EMBEDDING } as never });
  try {
    const [a, b] = [newTenant(), newTenant()];
    const aIds = await seedRealisticTenant(env.sql, a);
    const bIds = await seedRealisticTenant(env.sql, b);
    scriptJudge(env.fake);
    const api = memoryWithLlm(env.sql, env.config, env.llm, env.embedder);
    assert.equal((await api("POST", "/memory/consolidate", a, {})).status, 200);
    const valid = async (t: string) =>
      (await env.sql<{ n: number }[]>`
        select count(*)::int as n from public.devai_memories where owner_id = ${t} and is_valid`)[0]!.n;
    // The control: the same memories were consolidated in tenant a, so b's staying whole means isolation.
    assert.equal(await valid(a), 8, "tenant a's 15 memories are consolidated to 8");
    assert.equal(aIds.length, bIds.length);
    assert.equal(await valid(b), bIds.length, "tenant b's memories are untouched");
    const shown = judgedPairs(env.fake).flat().map(([o, n]) => [o, n].sort().join(" | "));
    assert.ok(shown.length > 0, "the judge was asked");
    assert.equal(new Set(shown).size, shown.length, "each pair once");
  } finally {
    await env.close();
  }
});
