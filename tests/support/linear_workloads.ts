// The text paths tests/linear_text.test.ts and tests/redact.test.ts count the work of (in a child
// process: tests/support/work.ts), each with the hostile texts that made an old implementation
// super-linear. A workload runs one text; `open` prepares what its runs share (a pool, a handler).
import { createHandler as createCompact } from "../../supabase/functions/memory-compact/handler.ts";
import { createHandler as createExtract } from "../../supabase/functions/memory-extract/handler.ts";
import { localEmbedder } from "../../supabase/functions/_shared/embeddings.ts";
import { redactSecrets } from "../../supabase/functions/_shared/redact.ts";
import { bulletText } from "../../supabase/functions/_shared/retrieval/format.ts";
import { shortenToFit } from "../../supabase/functions/_shared/fit-text.ts";
import { offlineCompressed, offlineForms, offlineSummary } from "../../supabase/functions/_shared/context/compress.ts";
import { extractEntityMentions } from "../../supabase/functions/_shared/entity-rules.ts";
import { splitSentences } from "../../supabase/functions/_shared/writing-constraints.ts";
import { extractByRules } from "../../supabase/functions/_shared/rule-extractor.ts";
import { drainQueue } from "../../supabase/functions/_shared/drain-queue.ts";
import { countTokens as libraryTokens } from "gpt-tokenizer";
import { userHeaders } from "./auth.ts";
import { testConfig } from "./config.ts";
import { newTenant, testSql } from "./seed.ts";

type Shapes = Record<string, (n: number) => string>;
export interface Workload {
  /** The hostile texts, by name: each makes a text of about n characters. */
  shapes: Shapes;
  /** Runs once before the texts; its result is passed to run. */
  open?: () => Promise<unknown>;
  /** Processes one text (throws when the answer is wrong); `run` numbers the calls. */
  run: (text: string, shared: unknown, call: number) => Promise<unknown> | unknown;
  close?: (shared: unknown) => Promise<void>;
  /** A route's request body around a text (to fit a text to the route's body limit). */
  body?: (text: string, call: number) => unknown;
}

/** Message texts of about n characters that made the old rule patterns (or the tokenizer) backtrack. */
export const MESSAGE_SHAPES: Shapes = {
  "ok\\n repeated": (n) => "ok\n".repeat(Math.ceil(n / 3)),
  "a comma run after 'remember'": (n) => `remember that the port is 5432${",".repeat(n)}x`,
  "a dot run": (n) => `Remember: the build is green${".".repeat(n)}a`,
  "a space run after 'no'": (n) => `no${" ".repeat(n)}x`,
  "one long word": (n) => "a".repeat(n),
  "a CJK run": (n) => "漢".repeat(n),
};

/** Long runs of the characters the redactor's patterns scan (each once made a pattern re-read or backtrack). */
export const SECRET_SHAPES: Shapes = {
  "a run": (n) => "a".repeat(n),
  "A_ then =": (n) => "A_".repeat(n / 2) + "=",
  "eyJ repeated": (n) => "eyJ".repeat(n / 3),
  "eyJ- repeated": (n) => "eyJ-".repeat(n / 4),
  "eyJ then a run": (n) => "eyJ" + "a".repeat(n),
  "eyJ-a. repeated": (n) => "eyJaaaaaaaaa-".repeat(n / 13) + ".",
  "a scheme then a run": (n) => "postgres://" + "u".repeat(n),
  "--token then dashes": (n) => "--token " + "-".repeat(n),
  "-u a: repeated": (n) => "-u a:".repeat(n / 5),
  "<password>x< repeated": (n) => "<password>xxxxxx<".repeat(n / 17),
  '"--password= repeated': (n) => '"--password='.repeat(n / 12),
  "define('a_key', repeated": (n) => "define('a_key', ".repeat(n / 16),
  "'pw' => repeated": (n) => "'pw' => ".repeat(n / 8),
  ".pgpass fields repeated": (n) => "a:5432:b:c:".repeat(n / 11),
  "<entry key=pw> then a run": (n) => '<entry key="password">' + "x".repeat(n),
  "DB_PASSWORD= then a, run": (n) => "DB_PASSWORD=" + "a,".repeat(n / 2),
  ";password= then a, run": (n) => ";password=" + "a,".repeat(n / 2),
  "dvm_ repeated": (n) => "dvm_".repeat(n / 4),
};

const config = testConfig();
const sync = (fn: (text: string) => unknown): Workload["run"] => (text) => fn(text);
const one = (name: string, shape: (n: number) => string, run: (text: string) => unknown): Workload => ({
  shapes: { [name]: shape },
  run: sync(run),
});

interface RouteShared {
  sql: ReturnType<typeof testSql>;
  handler: (req: Request) => Promise<Response>;
}

/** A route's workload: its handler on a pool of its own, a request body around each text, a tenant per call. */
function route(
  create: typeof createCompact,
  name: string,
  body: (text: string, call: number) => unknown,
  check: (res: Response, shared: RouteShared, tenant: string) => Promise<void>,
): Workload {
  return {
    shapes: MESSAGE_SHAPES,
    body,
    open: () => {
      const sql = testSql(2);
      const handler = create({ sql, config, embedder: localEmbedder(), kickWorker: () => Promise.resolve() });
      return Promise.resolve({ sql, handler } satisfies RouteShared);
    },
    run: async (text, shared, call) => {
      // A tenant per call: one tenant's heavy requests are rate-limited (20 at once).
      const tenant = newTenant();
      const req = new Request(`http://localhost/functions/v1/${name}`, {
        method: "POST",
        headers: await userHeaders(tenant),
        body: JSON.stringify(body(text, call)),
      });
      await check(await (shared as RouteShared).handler(req), shared as RouteShared, tenant);
    },
    close: (shared) => (shared as RouteShared).sql.end(),
  };
}

const LEAD = "The deploy pipeline runs the integration suite before every release of the API. ".repeat(100);

export const WORKLOADS: Record<string, Workload> = {
  redactSecrets: { shapes: SECRET_SHAPES, run: sync((text) => redactSecrets(text)) },

  // A compaction: the conversation's tokens counted, the turns to fold kept or cut, redacted.
  "memory-compact": route(
    createCompact,
    "memory-compact",
    (text, call) => ({
      session_id: `linear-${call}`,
      messages: [{ role: "user", content: LEAD }, { role: "user", content: text }, {
        role: "user",
        content: "What next?",
      }],
      trigger_tokens: 1000,
    }),
    async (res) => {
      const answer = await res.json();
      if (res.status !== 200 || answer.compacted !== true) throw new Error(JSON.stringify(answer).slice(0, 300));
    },
  ),

  // An extraction request and the worker's job: redaction, the rules, chunking by tokens.
  "memory-extract + worker": route(
    createExtract,
    "memory-extract",
    (text, call) => ({ session_id: `linear-${call}`, messages: [{ role: "user", content: text }] }),
    async (res, { sql }, tenant) => {
      if (res.status !== 202) throw new Error(await res.text());
      const deps = { sql, config, embedder: localEmbedder() };
      const report = await drainQueue(deps, { ownerId: tenant, workerId: "linear-test", maxJobs: 5 });
      if (report.dead + report.retried > 0 || report.done < 1) throw new Error(JSON.stringify(report));
    },
  ),

  // The retrieval block's bullet folding, the sentence splitter, the rules on filler lines.
  bulletText: one("a space run", (n) => `a${" ".repeat(n)}b`, bulletText),
  splitSentences: one("a dot run", (n) => `${".".repeat(n)}a`, splitSentences),
  extractByRules: one(
    "'ok' fillers",
    (n) => "ok\n".repeat(n / 3),
    (text) => extractByRules([{ role: "user", content: text }], { namespace: "devai/user" }),
  ),
  // Context assembly compresses every candidate offline.
  offlineForms: {
    shapes: {
      "one long dotted word": (n) => `use ${"a.".repeat(n / 2)} now`,
      "a comma run in a token": (n) => `pin ${",".repeat(n)}a`,
    },
    run: sync(offlineForms),
  },
  // A run of trimmable characters followed by another character: a trailing-trim pattern tried
  // from every start in the run (what these used) is quadratic in it.
  shortenToFit: one("a comma run", (n) => `a ${",".repeat(n)}x b c`, (text) => shortenToFit(text, () => true)),
  offlineSummary: one("a comma run", (n) => `${"w ".repeat(10)}${",".repeat(n)}x ${"w ".repeat(30)}`, offlineSummary),
  offlineCompressed: one("a comma run", (n) => `deploy ${",".repeat(n)}x now`, offlineCompressed),
  extractEntityMentions: {
    shapes: {
      "a comma run in a URL": (n) => `see https://a.io/${",".repeat(n)}x today`,
      // An install command's word is trimmed of its closing punctuation (install-packages.ts).
      "an install command's word": (n) => `npm install ${".".repeat(n)}a`,
      // Many install commands on one line: each reads its words up to the next, not to the line's end.
      "install commands on one line": (n) => "中npm i ".repeat(n / 7),
    },
    run: sync(extractEntityMentions),
  },

  // Known super-linear code, for the test that the counter still sees it (a V8 upgrade that
  // changed what these flags do would otherwise let every check above pass on anything).
  "known bad: a trailing trim by regex": one(
    "a comma run",
    (n) => `${",".repeat(n)}x`,
    (t) => t.replace(/[\s,;:.]+$/, ""),
  ),
  "known bad: a window re-read at every start": one(
    "eyJ- repeated",
    (n) => "eyJ-".repeat(n / 4),
    (t) => t.match(/\beyJ[A-Za-z0-9_-]{8,4096}\.eyJ[A-Za-z0-9_-]{8,8192}\.[A-Za-z0-9_-]{8,4096}/g),
  ),
  "known bad: a scan to the end from every position": one("a run", (n) => "a".repeat(n), (t) => {
    for (let i = 0; i < t.length; i++) t.indexOf("\n", i);
  }),
  "known bad: one long piece to the tokenizer library": one("a run", (n) => "a".repeat(n), (t) => libraryTokens(t)),
};
