// The nightly consolidation's bounds, with the fake LLM: the pairs cap and the token cap per tenant
// per UTC day (what earlier runs spent is what is left, the API run and the nightly job alike), and
// the pair fingerprints that keep a checked pair from being checked again for 14 days.
import assert from "node:assert/strict";
import { newTenant } from "./support/seed.ts";
import {
  judgedPairs,
  LOCAL_EMBEDDING,
  memoryWithLlm,
  scriptJudge,
  seedRealisticTenant,
  withSettings,
} from "./support/consolidation.ts";
import { writeEnv } from "./write_helpers.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };
const DAY = 86_400_000;
const key = ([a, b]: [string, string]) => [a, b].sort().join(" | ");

/**
 * The realistic tenant under some settings, with a judge that calls everything "different" (nothing
 * merges, so every night has the same pairs to offer), and the API at a given instant.
 */
async function night(settings: Record<string, number>) {
  const env = await writeEnv({ config: { embedding: LOCAL_EMBEDDING } as never });
  const restore = await withSettings(env.sql, settings);
  const t = newTenant();
  await seedRealisticTenant(env.sql, t);
  scriptJudge(env.fake, () => "different");
  const api = (at: Date) => memoryWithLlm(env.sql, env.config, env.llm, env.embedder, () => at);
  return { env, t, api, now: new Date(), close: async () => (await restore(), await env.close()) };
}

Deno.test({
  name: "caps: at most consolidation_pairs_per_night pairs a day, shared by every run of the day; the next day goes on",
  ...opts,
}, async () => {
  const { env, t, api, now, close } = await night({ consolidation_pairs_per_night: 2 });
  try {
    const first = await api(now)("POST", "/memory/consolidate", t, {});
    assert.equal(first.status, 200);
    assert.equal(first.body.pairs_checked, 2);
    assert.equal(first.body.stopped, "pairs");
    assert.equal(env.fake.chatRequests().length, 1, "two pairs: one prompt");

    const again = await api(now)("POST", "/memory/consolidate", t, {});
    assert.equal(again.body.caps.pairs_left, 0);
    assert.equal(again.body.pairs_checked, 0);
    assert.equal(env.fake.chatRequests().length, 1, "the day's pairs are spent: no model call");

    const tomorrow = await api(new Date(now.getTime() + DAY))("POST", "/memory/consolidate", t, {});
    assert.equal(tomorrow.body.pairs_checked, 2);
    assert.ok(tomorrow.body.pairs_skipped >= 2, "yesterday's pairs are fingerprinted");
    const [night1, night2] = judgedPairs(env.fake);
    assert.equal(night2!.filter((p) => night1!.map(key).includes(key(p))).length, 0, "no pair is judged twice");
  } finally {
    await close();
  }
});

Deno.test(
  { name: "caps: dry runs spend the same day's caps; once spent, another dry run calls no model", ...opts },
  async () => {
    const { env, t, api, now, close } = await night({ consolidation_pairs_per_night: 2 });
    try {
      const first = await api(now)("POST", "/memory/consolidate", t, { dry_run: true });
      assert.deepEqual([first.status, first.body.pairs_checked, first.body.caps.pairs_left], [200, 2, 2]);
      assert.ok(first.body.tokens_used > 0);
      const calls = env.fake.chatRequests().length;
      assert.equal(calls, 1);

      for (let i = 0; i < 3; i++) {
        const again = await api(now)("POST", "/memory/consolidate", t, { dry_run: true });
        assert.deepEqual([again.status, again.body.pairs_checked, again.body.tokens_used, again.body.caps.pairs_left], [
          200,
          0,
          0,
          0,
        ]);
      }
      assert.equal(env.fake.chatRequests().length, calls, "the day's pairs are spent: no model call");
      const real = await api(now)("POST", "/memory/consolidate", t, {});
      assert.deepEqual([real.body.pairs_checked, real.body.caps.tokens_left], [
        0,
        real.body.caps.tokens_per_night - first.body.tokens_used,
      ]);
      assert.equal(env.fake.chatRequests().length, calls, "nor for a real run");
    } finally {
      await close();
    }
  },
);

Deno.test({
  name: "caps: a token budget too small for the next prompt stops before the call; fingerprints expire after 14 days",
  ...opts,
}, async () => {
  const { env, t, api, now, close } = await night({ consolidation_tokens_per_night: 50 });
  try {
    const starved = await api(now)("POST", "/memory/consolidate", t, {});
    assert.equal(starved.status, 200);
    assert.deepEqual([starved.body.pairs_checked, starved.body.tokens_used, starved.body.stopped], [0, 0, "tokens"]);
    assert.equal(env.fake.chatRequests().length, 0);
    // The near-verbatim merges need no model: they still happen.
    assert.equal(starved.body.deduped, 2);

    await env.sql`update public.memory_settings set value = 20000 where name = 'consolidation_tokens_per_night'`;
    const night = await api(new Date(now.getTime() + DAY))("POST", "/memory/consolidate", t, {});
    assert.ok(night.body.pairs_checked > 0);
    const checked = env.fake.chatRequests().length;
    const within = await api(new Date(now.getTime() + 8 * DAY))("POST", "/memory/consolidate", t, {});
    assert.equal(within.body.pairs_checked, 0, "fingerprints hold for 14 days");
    assert.equal(env.fake.chatRequests().length, checked);
    const after = await api(new Date(now.getTime() + 16 * DAY))("POST", "/memory/consolidate", t, {});
    assert.equal(after.body.pairs_checked, night.body.pairs_checked, "after 14 days the pairs are checked again");
  } finally {
    await close();
  }
});
