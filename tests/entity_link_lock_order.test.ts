// Linking memories to entities locks the entities whose mentions it counts in id order
// (public.link_memory_entities, migration 20261202220000; docs/operations.md#lock-order), so two
// links of overlapping entity sets wait for each other in one order, never in a cycle. Before, its
// UPDATE took them in a hash aggregate's order, which depends on the set linked: a link of 5
// entities and one of 298 of a tenant's 400 took two of them in opposite orders, and with a third
// transaction holding a third entity until the first waited for it, they deadlocked (40P01) every
// time. Which entities a link takes in which order is not something a test can choose (it was the
// uuids' hashes), so this one checks the order itself: a third transaction holds one entity of the
// set, the link waits for it (pg_blocking_pids), and the entities the link holds meanwhile are
// exactly those before it in id order: none when it holds the first, all the others when it holds
// the last.
import assert from "node:assert/strict";
import { tenantItem, withTenant } from "../supabase/functions/_shared/db.ts";
import { linkEntities } from "../supabase/functions/_shared/entities.ts";
import { realServerOnly } from "./support/backend.ts";
import { newTenant, seedMemories, testSql } from "./support/seed.ts";
import { waitUntil } from "./support/wait.ts";

const ENTITIES = 40;

Deno.test({
  ...realServerOnly(
    "entity links: a link locks the entities it counts in id order",
    "three transactions on three connections at once",
  ),
  sanitizeOps: false,
  sanitizeResources: false,
}, async () => {
  const sql = testSql(2), linker = testSql(1), holder = testSql(1);
  try {
    const t = newTenant();
    const memories = (await seedMemories(
      sql,
      t,
      [0, 1, 2].map((i) => ({ content: `entity lock order memory ${i}`, namespace: "devai/global" })),
    )).map((m) => m.id);
    const names = Array.from({ length: ENTITIES }, (_, i) => `lockorder${String(i).padStart(2, "0")}`);
    const linksOf = (memoryId: string) =>
      names.map((name) => ({ memoryId, name, type: "tool" as const, mention: name }));
    await withTenant(sql, { tenantId: t, actor: "test" }, (tx) => linkEntities(tx, linksOf(memories[0]!)));
    const ids = (await sql<{ id: string }[]>`
      select id from public.memory_entities where owner_id = ${t} order by id`).map((r) => r.id);
    assert.equal(ids.length, ENTITIES);

    for (
      const [held, memoryId, heldMeanwhile] of [
        [ids[0]!, memories[1]!, 0],
        [ids[ENTITIES - 1]!, memories[2]!, ENTITIES - 1],
      ] as const
    ) {
      let linked: Promise<number> | undefined;
      await holder.begin(async (h) => {
        await h`select 1 from public.memory_entities where id = ${held} for no key update`;
        const [me] = await h<{ pid: number }[]>`select pg_backend_pid() as pid`;
        linked = linker.begin(async (l) => {
          await l`select 1 from ${tenantItem(l as never, t)}`;
          return await linkEntities(l as never, linksOf(memoryId));
        });
        linked.catch(() => {}); // awaited below
        await waitUntil(
          async () =>
            (await sql`select 1 from pg_stat_activity where ${me!.pid}::int = any (pg_blocking_pids(pid))`).length >
              0,
          "the link waits for the held entity",
          { pollMs: 10 },
        );
        // The link's locks conflict with this one's; the held entity's with the holder's.
        const [free] = await sql<{ n: number }[]>`
          select count(*)::int as n from (
            select 1 from public.memory_entities where owner_id = ${t} and id <> ${held}
               for no key update skip locked) e`;
        assert.equal(
          ENTITIES - 1 - free!.n,
          heldMeanwhile,
          `entities the link holds while it waits for the ${held === ids[0] ? "first" : "last"} in id order`,
        );
      });
      assert.equal(await linked, ENTITIES, "once the holder commits, the link goes on");
    }
    const counts = await sql<{ mention_count: number }[]>`
      select mention_count from public.memory_entities where owner_id = ${t}`;
    assert.deepEqual([...new Set(counts.map((c) => c.mention_count))], [3]);
  } finally {
    await Promise.all([sql.end(), linker.end(), holder.end()]);
  }
});
