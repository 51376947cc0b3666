// A dedup job storing a text takes the text's lock, as remember does (One live memory per text,
// README; docs/operations.md#lock-order): a job whose candidate a remember is storing at the same
// moment waits for it and finds it, instead of storing the text a second time. Ordered on pg_locks,
// no sleeps.
import assert from "node:assert/strict";
import { createSql, type Tx } from "../supabase/functions/_shared/db.ts";
import { lockContentHash } from "../supabase/functions/_shared/memories/record.ts";
import { testDatabaseUrl } from "./support/config.ts";
import { realServerOnly } from "./support/backend.ts";
import { newTenant } from "./support/seed.ts";
import { waitUntil } from "./support/wait.ts";
import { drainAll, queueDedupCandidate, writeEnv } from "./write_helpers.ts";

const NS = "devai/project/taskforge";
const TEXT = "The billing worker retries webhooks three times.";

Deno.test(
  {
    ...realServerOnly(
      "dedup: a candidate whose text a remember is storing at the same moment waits for it and is that memory, not a second copy",
      "two transactions at once: PGlite serves one connection",
    ),
    sanitizeOps: false,
    sanitizeResources: false,
  },
  async () => {
    const env = await writeEnv({ withLlm: false });
    const holder = createSql(testDatabaseUrl(), { max: 1 });
    try {
      const tenant = newTenant();
      await queueDedupCandidate(env, tenant, "text-lock", TEXT, NS);
      // A remember of the same text under way (what remember holds: the text's lock, then its insert).
      let commit!: () => void;
      const until = new Promise<void>((resolve) => commit = resolve);
      let inserted!: () => void;
      const stored = new Promise<void>((resolve) => inserted = resolve);
      const remembering = holder.begin(async (q) => {
        await lockContentHash(q as unknown as Tx, tenant, TEXT);
        await q`insert into public.devai_memories (owner_id, content, memory_type, namespace, priority, source, importance)
                values (${tenant}, ${"the billing worker  retries webhooks three times."}, 'semantic', ${NS}, 'high', 'user_stated', 3)`;
        inserted();
        await until;
      });
      await stored;
      const draining = drainAll(env.deps, tenant);
      const first = await Promise.race([
        draining.then(() => "drained"),
        waitUntil(async () => {
          const [{ w } = { w: 0 }] = await env.sql<{ w: number }[]>`
            select count(*)::int as w from pg_locks where locktype = 'advisory' and not granted`;
          return w > 0;
        }, "the dedup job waiting for the text's lock").then(() => "waited"),
      ]);
      commit();
      await remembering;
      await draining;
      assert.equal(first, "waited", "the dedup job went on without waiting for the remember of its text");
      const live = await env.sql<{ content: string; source: string }[]>`
        select content, source from public.devai_memories
         where owner_id = ${tenant} and is_valid and state = 'active'`;
      assert.equal(live.length, 1, JSON.stringify(live));
      assert.equal(live[0]!.source, "user_stated");
    } finally {
      await holder.end();
      await env.close();
    }
  },
);
