// A fake OpenAI-compatible server for tests: a real HTTP server on 127.0.0.1 (random port) that the
// real `openai` SDK talks to through its base URL. Production code does not know it exists.
//
//   const fake = await FakeOpenAI.start();
//   fake.onChat("What from this conversation", [reply.text("not json"), reply.json({ stored: [] })]);
//   fake.onChat((req) => req.messages.some(...), reply.error(429, { retryAfter: 0 }));
//   fake.setEmbedding("some text", vector);            // scripted vectors control similarity
//   ... config.llm.baseUrl = fake.baseUrl ...
//   fake.chatRequests().length                          // every request is recorded (probes: probeRequests())
//   fake.models = ["fake-llm"]; fake.embeddingDimensions = 768   // GET /models; a model that ignores `dimensions`
//   await fake.close();
//
// Scripts are tried in registration order; the first whose matcher accepts the request answers.
// A script given a list answers with the next item on each call and repeats the last one.
// Unmatched chat requests get a 500 naming the problem, so a missing script fails loudly.

/** The worker's probe of the provider, by its name (llm-outage.ts PROBE_NAME). */
// deno-lint-ignore no-explicit-any
const isProbe = (body: any) => JSON.stringify(body?.messages ?? []).includes("provider_probe");

export interface RecordedRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  // deno-lint-ignore no-explicit-any
  body: any;
  at: number;
}

export interface ChatRequestBody {
  model: string;
  messages: { role: string; content: unknown }[];
  response_format?: unknown;
  [k: string]: unknown;
}

export type Reply =
  | { kind: "content"; content: string; usage?: { prompt_tokens: number; completion_tokens: number } }
  | { kind: "error"; status: number; headers?: Record<string, string>; body?: unknown }
  | { kind: "slow"; delayMs: number; then: Reply }
  | { kind: "hang" }
  | { kind: "until"; released: Promise<unknown>; then: Reply }
  | { kind: "dynamic"; fn: (req: ChatRequestBody) => Reply }
  | { kind: "pass" };

export const reply = {
  /** A chat completion whose message content is the JSON text of value. */
  json: (value: unknown): Reply => ({ kind: "content", content: JSON.stringify(value) }),
  /** A chat completion with arbitrary content (e.g. invalid JSON). */
  text: (content: string): Reply => ({ kind: "content", content }),
  /** An HTTP error in OpenAI's error shape; retryAfter in seconds sets the Retry-After header. */
  error: (status: number, opts: { retryAfter?: number; message?: string } = {}): Reply => ({
    kind: "error",
    status,
    headers: opts.retryAfter !== undefined ? { "retry-after": String(opts.retryAfter) } : undefined,
    body: {
      error: {
        message: opts.message ?? `fake error ${status}`,
        type: status === 429 ? "rate_limit_exceeded" : "server_error",
        code: null,
      },
    },
  }),
  /** Answers after delayMs. */
  slow: (delayMs: number, then: Reply): Reply => ({ kind: "slow", delayMs, then }),
  /** Never answers until the client gives up (its timeout) or the server closes. */
  hang: (): Reply => ({ kind: "hang" }),
  /** Answers `then` once `released` settles (a test decides when a slow model answers). */
  until: (released: Promise<unknown>, then: Reply): Reply => ({ kind: "until", released, then }),
  /** Computes the reply from the request. */
  dynamic: (fn: (req: ChatRequestBody) => Reply): Reply => ({ kind: "dynamic", fn }),
  /** In failEmbeddings: this request is answered normally (a failure after some good requests). */
  pass: (): Reply => ({ kind: "pass" }),
};

type ChatMatcher = string | RegExp | ((req: ChatRequestBody) => boolean);

interface ChatScript {
  match: ChatMatcher;
  replies: Reply[];
  next: number;
}

export class FakeOpenAI {
  readonly requests: RecordedRequest[] = [];
  private readonly scripts: ChatScript[] = [];
  private readonly embeddings = new Map<string, number[]>();
  private readonly embeddingFaults: Reply[] = [];
  private readonly hangs = new Set<() => void>();
  private readonly chatWaiters: { count: number; resolve: () => void }[] = [];
  private server!: Deno.HttpServer<Deno.NetAddr>;
  baseUrl = "";
  /** What GET /v1/models lists. */
  models: string[] = ["fake-llm", "text-embedding-3-small"];
  /** When set, a request without `Authorization: Bearer <requireKey>` gets 401, as a provider refusing a key. */
  requireKey: string | undefined;
  /**
   * When set, every chat request gets this reply, the worker's probe of the provider included: a
   * provider that is down (reply.error(503)) or refuses the service's key (reply.error(401)).
   * Unset, the probe (a request named provider_probe, llm-outage.ts) is answered before any script:
   * the provider is up, whatever the scripts fail.
   */
  chatOutage: Reply | undefined;
  /** When set, every embedding has this many dimensions whatever the request asks (a model that ignores `dimensions`). */
  embeddingDimensions: number | undefined;
  /** Chat requests received and not yet answered, and the most there were at once: the load a provider sees. */
  chatInFlight = 0;
  maxChatInFlight = 0;

  static async start(): Promise<FakeOpenAI> {
    const fake = new FakeOpenAI();
    await fake.listen();
    return fake;
  }

  private listen(): Promise<void> {
    return new Promise((resolve) => {
      this.server = Deno.serve(
        {
          hostname: "127.0.0.1",
          port: 0,
          onListen: ({ port }) => {
            this.baseUrl = `http://127.0.0.1:${port}/v1`;
            resolve();
          },
        },
        (req) => this.handle(req),
      );
    });
  }

  /** Registers a chat script: matcher is a substring/regex of the request's message texts or a predicate. */
  onChat(match: ChatMatcher, replies: Reply | Reply[]): this {
    this.scripts.push({ match, replies: Array.isArray(replies) ? replies : [replies], next: 0 });
    return this;
  }

  /** Forgets chat scripts and recorded requests (embedding vectors stay). */
  reset(): void {
    this.scripts.length = 0;
    this.requests.length = 0;
  }

  /** The vector returned for exactly this input text (any dimension; normalised on the way out). */
  setEmbedding(text: string, vector: number[]): this {
    this.embeddings.set(text, vector);
    return this;
  }

  /** The next embedding requests answer with these replies (errors, slow answers), one each, then normally. */
  failEmbeddings(...replies: Reply[]): this {
    this.embeddingFaults.push(...replies);
    return this;
  }

  /** Chat requests but the worker's probes of the provider (probeRequests). */
  chatRequests(): RecordedRequest[] {
    return this.requests.filter((r) => r.path.endsWith("/chat/completions") && !isProbe(r.body));
  }

  /** The worker's probes: a request holding nothing of any job, after a failure an outage may give (llm-outage.ts). */
  probeRequests(): RecordedRequest[] {
    return this.requests.filter((r) => r.path.endsWith("/chat/completions") && isProbe(r.body));
  }

  /** Resolves once the server has received `count` chat requests in all (an event to wait on, not a delay). */
  chatRequestsReceived(count: number): Promise<void> {
    if (this.chatRequests().length >= count) return Promise.resolve();
    const { promise, resolve } = Promise.withResolvers<void>();
    this.chatWaiters.push({ count, resolve });
    return promise;
  }

  embeddingRequests(): RecordedRequest[] {
    return this.requests.filter((r) => r.path.endsWith("/embeddings"));
  }

  async close(): Promise<void> {
    for (const release of this.hangs) release();
    this.hangs.clear();
    await this.server.shutdown();
  }

  private async handle(req: Request): Promise<Response> {
    const url = new URL(req.url);
    const text = await req.text();
    // deno-lint-ignore no-explicit-any
    let body: any = undefined;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = text;
    }
    const headers: Record<string, string> = {};
    req.headers.forEach((v, k) => (headers[k] = v));
    this.requests.push({ method: req.method, path: url.pathname, headers, body, at: Date.now() });

    if (this.requireKey !== undefined && headers.authorization !== `Bearer ${this.requireKey}`) {
      return errorJson(401, "fake OpenAI: incorrect API key provided");
    }
    // req.signal is read only when a reply waits (reading it on every request makes Deno warn).
    if (req.method === "POST" && url.pathname === "/v1/chat/completions") {
      const received = this.chatRequests().length;
      for (const w of this.chatWaiters.filter((w) => w.count <= received)) w.resolve();
      this.maxChatInFlight = Math.max(this.maxChatInFlight, ++this.chatInFlight);
      try {
        return await this.chat(body as ChatRequestBody, () => req.signal);
      } finally {
        this.chatInFlight--;
      }
    }
    if (req.method === "POST" && url.pathname === "/v1/embeddings") {
      const fault = this.embeddingFaults.shift();
      if (fault && fault.kind !== "pass") return await this.render(fault, body as ChatRequestBody, () => req.signal);
      return this.embed(body);
    }
    if (req.method === "GET" && url.pathname === "/v1/models") {
      return Response.json({
        object: "list",
        data: this.models.map((id) => ({ id, object: "model", created: 0, owned_by: "fake" })),
      });
    }
    return errorJson(404, `fake OpenAI: no route ${req.method} ${url.pathname}`);
  }

  private async chat(body: ChatRequestBody, signal: () => AbortSignal): Promise<Response> {
    if (this.chatOutage) return await this.render(this.chatOutage, body, signal);
    if (isProbe(body)) {
      return await this.render(reply.json({ ok: true }), body, signal);
    }
    const script = this.scripts.find((s) => matches(s.match, body));
    if (!script) {
      const last = body?.messages?.at(-1);
      return errorJson(
        500,
        `fake OpenAI: no chat script matched (last message: ${String(textOf(last?.content)).slice(0, 200)})`,
      );
    }
    const r = script.replies[Math.min(script.next, script.replies.length - 1)]!;
    script.next++;
    return await this.render(r, body, signal);
  }

  private async render(r: Reply, body: ChatRequestBody, signal: () => AbortSignal): Promise<Response> {
    switch (r.kind) {
      case "content": {
        const prompt = r.usage?.prompt_tokens ?? approxTokens(JSON.stringify(body.messages ?? []));
        const completion = r.usage?.completion_tokens ?? approxTokens(r.content);
        return Response.json({
          id: `chatcmpl-fake-${this.requests.length}`,
          object: "chat.completion",
          created: Math.floor(Date.now() / 1000),
          model: body.model ?? "fake-model",
          choices: [{
            index: 0,
            message: { role: "assistant", content: r.content, refusal: null },
            finish_reason: "stop",
            logprobs: null,
          }],
          usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
        });
      }
      case "error":
        return new Response(JSON.stringify(r.body ?? { error: { message: "fake error" } }), {
          status: r.status,
          headers: { "content-type": "application/json", ...r.headers },
        });
      case "slow":
        await this.wait(r.delayMs, signal);
        return await this.render(r.then, body, signal);
      case "hang":
        await this.wait(Number.POSITIVE_INFINITY, signal);
        return errorJson(504, "fake OpenAI: hang released");
      case "until":
        await Promise.race([r.released, this.wait(Number.POSITIVE_INFINITY, signal)]);
        return await this.render(r.then, body, signal);
      case "dynamic":
        return await this.render(r.fn(body), body, signal);
      case "pass":
        return errorJson(500, "fake OpenAI: reply.pass() answers embeddings only");
    }
  }

  /** Waits ms, or until the client aborts or the server closes (never leaks a pending timer). */
  private wait(ms: number, signalOf: () => AbortSignal): Promise<void> {
    const signal = signalOf();
    return new Promise((resolve) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const done = () => {
        if (timer !== undefined) clearTimeout(timer);
        signal.removeEventListener("abort", done);
        this.hangs.delete(done);
        resolve();
      };
      if (Number.isFinite(ms)) timer = setTimeout(done, ms);
      signal.addEventListener("abort", done);
      this.hangs.add(done);
    });
  }

  private embed(
    body: { input: string | string[]; model?: string; dimensions?: number; encoding_format?: string },
  ): Response {
    const inputs = Array.isArray(body.input) ? body.input : [body.input];
    const dims = this.embeddingDimensions ?? body.dimensions ?? 512;
    const data = inputs.map((text, index) => {
      const scripted = this.embeddings.get(String(text));
      const vec = normalise(scripted ? fit(scripted, dims) : hashVector(String(text), dims));
      const embedding = body.encoding_format === "base64" ? toBase64Float32(vec) : vec;
      return { object: "embedding", index, embedding };
    });
    const tokens = inputs.reduce((n, t) => n + approxTokens(String(t)), 0);
    return Response.json({
      object: "list",
      data,
      model: body.model ?? "fake-embedding",
      usage: { prompt_tokens: tokens, total_tokens: tokens },
    });
  }
}

function matches(m: ChatMatcher, body: ChatRequestBody): boolean {
  if (typeof m === "function") return m(body);
  const all = (body.messages ?? []).map((x) => textOf(x.content)).join("\n");
  return typeof m === "string" ? all.includes(m) : m.test(all);
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((p) => (p && typeof p.text === "string" ? p.text : "")).join("\n");
  return "";
}

function errorJson(status: number, message: string): Response {
  return Response.json({ error: { message, type: "fake_error", code: null } }, { status });
}

const approxTokens = (s: string) => Math.max(1, Math.ceil(s.length / 4));

// ---------------------------------------------------------------------------------------------
// Vectors tests use to control similarity.

/** A deterministic pseudo-random unit vector for a seed string (FNV-1a + xorshift). */
export function hashVector(seed: string, dims = 512): number[] {
  let h = 0x811c9dc5;
  for (let i = 0; i < seed.length; i++) {
    h ^= seed.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  let x = h || 1;
  const out: number[] = [];
  for (let i = 0; i < dims; i++) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    out.push((x / 0xffffffff) * 2 - 1);
  }
  return normalise(out);
}

/** A unit vector whose cosine similarity with `base` is exactly `cos` (built from an orthogonal direction). */
export function vectorWithSimilarity(base: number[], cos: number, seed = "orthogonal"): number[] {
  const b = normalise(base);
  const r = hashVector(seed, b.length);
  const dot = r.reduce((s, v, i) => s + v * b[i]!, 0);
  const ortho = normalise(r.map((v, i) => v - dot * b[i]!));
  const sin = Math.sqrt(Math.max(0, 1 - cos * cos));
  return b.map((v, i) => cos * v + sin * ortho[i]!);
}

export function cosine(a: number[], b: number[]): number {
  const an = normalise(a), bn = normalise(b);
  return an.reduce((s, v, i) => s + v * bn[i]!, 0);
}

function normalise(v: number[]): number[] {
  const n = Math.sqrt(v.reduce((s, x) => s + x * x, 0)) || 1;
  return v.map((x) => x / n);
}

function fit(v: number[], dims: number): number[] {
  return v.length === dims ? v : Array.from({ length: dims }, (_, i) => v[i] ?? 0);
}

function toBase64Float32(v: number[]): string {
  const buf = new Float32Array(v);
  const bytes = new Uint8Array(buf.buffer);
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin);
}
