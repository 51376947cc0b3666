// Suite 'background': the background intelligence's costs (docs/consolidation.md).
//   night        one nightly consolidation (the function the 'nightly_consolidation' job runs) of a
//                fresh tenant of 10,000 memories, written the way extraction leaves them: 6,500
//                facts about services, some restated word for word, rephrased, bumped to a new
//                version or contradicted; embedded with the offline embedder (so similar texts
//                have similar vectors). The model is a fake one in process that answers every
//                pair at once and counts tokens with the tokenizer, so the time is the service's
//                own (pool, hybrid searches, pre-filters, writes) and the tokens are what a real
//                model would be sent. Default caps (50 pairs, 20,000 tokens, a pool of 500); then
//                the same night again (fingerprints: nothing to re-check), and a catch-up night
//                with the caps lifted (every memory in the pool, 1,000 pairs)
//   checkpoint   PUT and GET memory/checkpoints/{thread_id} of a 1 MB state through the memory
//                function's handler, in process: p50/p95 (target p95 < 100 ms)
// A failure fails the run.
import type { z } from "zod";
import { createSql, toVectorLiteral } from "../../supabase/functions/_shared/db.ts";
import { localEmbedder } from "../../supabase/functions/_shared/embeddings.ts";
import { loadConfig } from "../../supabase/functions/_shared/env.ts";
import { emptyUsage, type Llm, type LlmUsage, type PromptMessage } from "../../supabase/functions/_shared/llm.ts";
import { PAIR_JUDGE_MARK } from "../../supabase/functions/_shared/pair-judge.ts";
import { consolidateTenant } from "../../supabase/functions/_shared/tenant-consolidation.ts";
import { countTokens } from "../../supabase/functions/_shared/tokens.ts";
import { createHandler as createMemoryHandler } from "../../supabase/functions/memory/handler.ts";
import type { Sql } from "../benchdb.ts";
import { fmt, formatTable, log, now, Rng, round, summarize } from "../lib.ts";
import { benchEnv, signUserToken } from "./handler.ts";

export interface BackgroundResult {
  table: string;
  [k: string]: unknown;
}

const ADJ =
  "amber azure brisk cedar coral dusky ember fable gilded hazel ivory jade keen lunar maple noble ochre pearl quartz rustic sable tawny umber velvet willow young zesty bold calm deft eager fair grand humble jolly lucid merry nimble"
    .split(" ");
const NOUN =
  "ledger badger beacon canyon dragon falcon garden harbor island jungle kettle lantern meadow needle orchard parrot quarry river saddle tunnel valley wagon yarrow zephyr anchor basket candle dolphin engine fountain glacier hammer"
    .split(" ");
const TOOLS = [
  "Redis",
  "Postgres",
  "Kafka",
  "RabbitMQ",
  "S3",
  "Elasticsearch",
  "Memcached",
  "DynamoDB",
  "ClickHouse",
  "SQLite",
  "NATS",
  "Temporal",
];
const PURPOSES = [
  "session caching",
  "job queues",
  "audit logs",
  "search indexing",
  "rate limiting",
  "feature flags",
  "payment events",
  "email retries",
  "image thumbnails",
  "report exports",
];

interface Fact {
  family: number;
  content: string;
}

/** The tenant's 10,000 memories (see the suite comment); deterministic for a seed. */
export function realisticTenant(seed: number, size = 10_000): Fact[] {
  const rng = new Rng(seed);
  const out: Fact[] = [];
  for (let f = 0; out.length < size; f++) {
    const service = `${ADJ[f % ADJ.length]}-${NOUN[Math.floor(f / ADJ.length) % NOUN.length]}${
      f >= ADJ.length * NOUN.length ? `-${Math.floor(f / (ADJ.length * NOUN.length))}` : ""
    }`;
    const tool = TOOLS[rng.int(TOOLS.length)]!, purpose = PURPOSES[rng.int(PURPOSES.length)]!;
    const versioned = rng.next() < 0.15;
    const v = 14 + rng.int(6);
    const base = versioned
      ? `The ${service} service runs on Node ${v}.`
      : `The ${service} service uses ${tool} for ${purpose}.`;
    out.push({ family: f, content: base });
    const r = rng.next();
    if (r < 0.18) {
      out.push({
        family: f,
        content: base.replace(/\.$/, "").replace(/^The /, "This ") + (rng.next() < 0.5 ? "." : ""),
      });
    } else if (r < 0.3 && !versioned) {
      out.push({ family: f, content: `For ${purpose}, the ${service} service relies on ${tool}.` });
    } else if (r < 0.4 && versioned) out.push({ family: f, content: `The ${service} service runs on Node ${v + 2}.` });
    else if (r < 0.44 && !versioned) {
      out.push({ family: f, content: `The ${service} service no longer uses ${tool} for ${purpose}.` });
    }
  }
  return out.slice(0, size);
}

/** The fake model: a verdict per pair from the texts (same service: same, a new version, or a "no longer"), tokens counted. */
function fakeJudge(): Llm & { calls: number } {
  const total: LlmUsage = emptyUsage();
  const service = (s: string) => /The (\S+) service|the (\S+) service/.exec(s)?.slice(1).find(Boolean);
  const judge = {
    model: "bench-fake-judge",
    calls: 0,
    get totalUsage() {
      return total;
    },
    completeJson<S extends z.ZodType>(schema: S, messages: PromptMessage[]) {
      judge.calls++;
      const prompt = messages.map((m) => m.content).join("\n");
      if (!prompt.includes(PAIR_JUDGE_MARK)) throw new Error("bench fake judge: only pair prompts are expected");
      const pairs = [...(messages.at(-1)?.content ?? "").matchAll(/\[(\d+)\]\n {2}OLDER: (.*)\n {2}NEWER: (.*)/g)];
      const verdicts = pairs.map((m) => {
        const [older, newer] = [m[2]!, m[3]!];
        const verdict = service(older) !== service(newer)
          ? "different"
          : /no longer/.test(older) !== /no longer/.test(newer)
          ? "contradiction"
          : /Node (\d+)/.exec(older)?.[1] !== /Node (\d+)/.exec(newer)?.[1]
          ? "refines"
          : "same";
        return { pair: Number(m[1]), verdict, reason: "bench" };
      });
      const answer = JSON.stringify({ verdicts });
      const usage = {
        promptTokens: countTokens(prompt),
        completionTokens: countTokens(answer),
        totalTokens: 0,
        requests: 1,
      };
      usage.totalTokens = usage.promptTokens + usage.completionTokens;
      for (const k of Object.keys(total) as (keyof LlmUsage)[]) total[k] += usage[k];
      return Promise.resolve({
        value: schema.parse({ verdicts }) as z.infer<S>,
        usage,
        model: judge.model,
        repaired: false,
      });
    },
  };
  return judge;
}

async function loadTenant(sql: Sql, ownerId: string, facts: Fact[], seed: number): Promise<number> {
  const t0 = now();
  const rng = new Rng(seed + 1);
  const embedder = localEmbedder();
  const DAY = 86_400_000;
  for (let i = 0; i < facts.length; i += 500) {
    const chunk = facts.slice(i, i + 500);
    const vectors = await embedder.embed(chunk.map((f) => f.content));
    const rows = chunk.map((f, k) => {
      // 30% learned in the last 72 hours, the rest over the last 80 days; importance 1-5 as extraction gives it.
      const age = rng.next() < 0.3 ? rng.next() * 3 * DAY : (3 + rng.next() * 77) * DAY;
      return {
        content: f.content,
        embedding: toVectorLiteral(vectors[k]!),
        importance: 1 + rng.int(5),
        at: new Date(Date.now() - age).toISOString(),
      };
    });
    await sql.begin(async (tx) => {
      await tx`select set_config('memory.actor', 'bench:load', true), set_config('memory.change_log', 'bulk', true)`;
      await tx`
        insert into public.devai_memories
          (owner_id, content, embedding, embedding_model, memory_type, namespace, priority, source, importance, created_at, updated_at, last_accessed_at)
        select ${ownerId}, r.content, r.embedding::extensions.vector, ${embedder.model}, 'semantic', 'devai/project/shop/notes', 'medium',
               'discovery', r.importance, r.at, r.at, r.at
          from json_to_recordset(${
        tx.json(rows as never)
      }::json) as r(content text, embedding text, importance int, at timestamptz)`;
    });
  }
  await sql`analyze public.devai_memories`;
  return round((now() - t0) / 1000, 1);
}

export async function runBackground(
  sql: Sql,
  url: string,
  opts: { seed: number; tenantSize: number; checkpointSamples: number },
): Promise<BackgroundResult> {
  const result: Record<string, unknown> = {};
  const rows: string[][] = [];
  const ownerId = crypto.randomUUID();
  const facts = realisticTenant(opts.seed, opts.tenantSize);
  const loadSeconds = await loadTenant(sql, ownerId, facts, opts.seed);
  log(
    `background: tenant of ${facts.length} memories (${
      new Set(facts.map((f) => f.family)).size
    } facts) loaded in ${loadSeconds} s`,
  );
  result.tenant = { memories: facts.length, facts: new Set(facts.map((f) => f.family)).size, loadSeconds };

  // The offline embedder is the configured one: the tenant's vectors are its.
  const env = benchEnv(url);
  for (const k of ["EMBEDDING_PROVIDER", "EMBEDDING_API_KEY", "EMBEDDING_MODEL", "OPENAI_API_KEY"]) delete env[k];
  const config = loadConfig(env);
  const pool = createSql(url, { max: 4, applicationName: "devai-bench-background" });
  const embedder = localEmbedder();
  try {
    // Night 2 is the same UTC day as night 1: its caps are spent. The catch-up night is the next day.
    const DAY = 86_400_000;
    const nights: [string, Date, Record<string, number>][] = [
      ["night 1 (default caps)", new Date(), {}],
      ["night 1 again, same day (caps spent)", new Date(), {}],
      ["catch-up night (caps lifted: pool 20,000, 1,000 pairs, 1M tokens)", new Date(Date.now() + DAY), {
        consolidation_pool_per_night: 20000,
        consolidation_pairs_per_night: 1000,
        consolidation_tokens_per_night: 1000000,
      }],
    ];
    for (const [name, at, settings] of nights) {
      const before = await sql<{ name: string; value: string }[]>`
        select name, value::text from public.memory_settings where name = any (${Object.keys(settings)}::text[])`;
      for (const [k, v] of Object.entries(settings)) {
        await sql`update public.memory_settings set value = ${v} where name = ${k}`;
      }
      const judge = fakeJudge();
      const t0 = now();
      try {
        const r = await consolidateTenant({ sql: pool, embedder, llm: judge, config }, {
          ownerId,
          trigger: "nightly",
          dryRun: false,
          now: at,
        });
        const seconds = round((now() - t0) / 1000, 2);
        result[name] = { seconds, calls: judge.calls, ...r };
        rows.push([
          name,
          fmt(seconds, 1),
          String(r.pool),
          String(r.pairs_found),
          String(r.pairs_checked),
          String(r.tokens_used),
          String(judge.calls),
          String(r.deduped),
          String(r.merged),
          String(r.contradictions_found),
          r.stopped ?? "",
        ]);
        log(
          `${name}: ${seconds} s, pairs ${r.pairs_checked}, tokens ${r.tokens_used}, deduped ${r.deduped}, merged ${r.merged}`,
        );
      } finally {
        for (const b of before) {
          await sql`update public.memory_settings set value = ${b.value}::numeric where name = ${b.name}`;
        }
      }
    }
    const [valid] = await sql<
      { n: number }[]
    >`select count(*)::int as n from public.devai_memories where owner_id = ${ownerId} and is_valid`;
    result.validAfter = valid!.n;

    // Checkpoints: a 1 MB state through the handler.
    const handler = createMemoryHandler({ sql: pool, config, embedder });
    const token = await signUserToken(ownerId);
    const state = {
      messages: Array.from(
        { length: 2000 },
        (_, i) => ({ role: i % 2 ? "assistant" : "user", content: `${i} ${"lorem ipsum dolor ".repeat(27)}` }),
      ),
    };
    const bytes = new TextEncoder().encode(JSON.stringify(state)).byteLength;
    const save: number[] = [], load: number[] = [];
    let version = 0;
    for (let i = 0; i < opts.checkpointSamples + 3; i++) {
      const body = JSON.stringify({ state: { ...state, step: i }, version });
      const t0 = now();
      const res = await handler(
        new Request("http://bench.local/memory/checkpoints/bench-thread", {
          method: "PUT",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          body,
        }),
      );
      const saved = await res.json();
      if (res.status !== 200 && res.status !== 201) {
        throw new Error(`checkpoint save answered ${res.status}: ${JSON.stringify(saved).slice(0, 300)}`);
      }
      if (i >= 3) save.push(now() - t0);
      version = saved.version;
      const t1 = now();
      const got = await handler(
        new Request("http://bench.local/memory/checkpoints/bench-thread", {
          headers: { authorization: `Bearer ${token}` },
        }),
      );
      const text = await got.text();
      if (got.status !== 200 || !text.includes(`"step": ${i}`)) {
        throw new Error(`checkpoint load answered ${got.status}`);
      }
      if (i >= 3) load.push(now() - t1);
    }
    const s = summarize(save), l = summarize(load);
    result.checkpoint = { bytes, save: s, load: l };
    log(`checkpoint ${bytes} bytes: save p95 ${fmt(s.p95)} ms, load p95 ${fmt(l.p95)} ms`);
    const ck = formatTable(["1 MB checkpoint (" + bytes + " bytes)", "n", "p50 ms", "p95 ms", "p99 ms", "target"], [
      [
        "PUT memory/checkpoints/{thread_id} (save, version checked)",
        String(s.n),
        fmt(s.p50),
        fmt(s.p95),
        fmt(s.p99),
        "p95 < 100 ms",
      ],
      ["GET memory/checkpoints/{thread_id} (load)", String(l.n), fmt(l.p50), fmt(l.p95), fmt(l.p99), "p95 < 100 ms"],
    ]);
    const night = formatTable([
      "consolidation of a 10k-memory tenant",
      "s",
      "pool",
      "pairs found",
      "pairs judged",
      "tokens",
      "model calls",
      "deduped",
      "merged",
      "contradictions",
      "stopped by",
    ], rows);
    return {
      ...result,
      table: [
        `## background: one night of consolidation (fake model in process; ${facts.length} memories, valid after: ${
          valid!.n
        })`,
        night,
        "",
        "## background: checkpoints",
        ck,
      ].join("\n"),
    };
  } finally {
    await pool.end();
  }
}
