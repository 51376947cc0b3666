// Chat LLM for extraction, dedup decisions and compaction, on the `openai` SDK so OpenAI, GLM,
// Ollama, vLLM or any OpenAI-compatible server works (base URL, model and key from the config).
//
// What callers get: completeJson(schema, messages) returns a value validated by a zod schema.
// - Transient failures (429, 5xx, timeouts, connection resets) are retried with exponential backoff
//   (honouring Retry-After within a cap). The SDK's own retries are off (maxRetries: 0) so this
//   module decides, and tests can count the requests the server saw.
// - Output that is not JSON or does not match the schema gets ONE repair round trip (the error is
//   sent back to the model), then a typed LlmOutputError. A model that cannot follow the schema is
//   not retried forever: the job layer parks the job as dead with the error.
// - Token usage of every call (repairs and retries included) is returned and summed per client.
import OpenAI from "openai";
import { z } from "zod";
import type { Config } from "./env.ts";
import { trimEndOf } from "./text-scan.ts";
import { issuesText } from "./issue-text.ts";
import { withoutNul } from "./schemas.ts";
import { classify, DEFAULT_RETRY, type RetryPolicy, retryWait } from "./llm-retry.ts";

// ---------------------------------------------------------------------------------------------
// OpenAI chat message format (what the agent sends to memory-extract / memory-compact). Defined
// here because it is the LLM wire format both functions accept; unknown fields are kept (passthrough)
// so a compacted list round-trips everything the agent sent.

const TextPart = z.looseObject({ type: z.literal("text"), text: z.string() });
const OtherPart = z.looseObject({ type: z.string().min(1) });
const Content = z.union([z.string(), z.array(z.union([TextPart, OtherPart])).max(500)]);

/** Chat messages whose names and ids are `label` strings (their length: the two schemas below). */
function chatMessageSchema(label: () => z.ZodString) {
  const toolCall = z.looseObject({
    id: label().min(1),
    type: z.literal("function"),
    function: z.looseObject({ name: label().min(1), arguments: z.string() }),
  });
  // Postgres cannot store U+0000: refused (400 naming where) in any field, the unknown ones kept too.
  return withoutNul(z.discriminatedUnion("role", [
    z.looseObject({ role: z.literal("system"), content: Content, name: label().optional() }),
    z.looseObject({ role: z.literal("developer"), content: Content, name: label().optional() }),
    z.looseObject({ role: z.literal("user"), content: Content, name: label().optional() }),
    z.looseObject({
      role: z.literal("assistant"),
      content: Content.nullable().optional(),
      name: label().optional(),
      tool_calls: z.array(toolCall).max(200).optional(),
    }).refine((m) => (m.content !== undefined && m.content !== null) || (m.tool_calls?.length ?? 0) > 0, {
      message: "an assistant message needs content or tool_calls",
    }),
    z.looseObject({ role: z.literal("tool"), content: Content, tool_call_id: label().min(1) }),
  ]));
}

export const ChatMessageSchema = chatMessageSchema(() => z.string().max(200));
/**
 * A message as an extract job stores it: checked by ChatMessageSchema when sent, then redacted; a
 * marker outgrows most secrets, so a 200-character name or id holding one is longer now. Refused,
 * it killed its job and every later job of the session, which queue it again.
 */
export const StoredChatMessageSchema = chatMessageSchema(() => z.string());
export type ChatMessage = z.infer<typeof ChatMessageSchema>;

/** The most messages one request may send (memory-extract, memory-compact). */
export const MAX_MESSAGES_PER_REQUEST = 20_000;

/** The messages this module sends: plain text turns. */
export interface PromptMessage {
  role: "system" | "user" | "assistant";
  content: string;
}

// ---------------------------------------------------------------------------------------------
export interface LlmUsage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
  /** HTTP requests made (first try, transient retries and the repair round trip). */
  requests: number;
}

/** A zero usage, to add calls to (addUsage). */
export function emptyUsage(): LlmUsage {
  return { promptTokens: 0, completionTokens: 0, totalTokens: 0, requests: 0 };
}

/** Adds one call's (or one job's) usage to a running sum. */
export function addUsage(sum: LlmUsage, u: LlmUsage): void {
  for (const k of Object.keys(sum) as (keyof LlmUsage)[]) sum[k] += u[k];
}

export interface LlmResult<T> {
  value: T;
  usage: LlmUsage;
  model: string;
  /** True when the first answer was invalid and the repair round trip fixed it. */
  repaired: boolean;
}

export interface CompleteJsonOptions {
  /** Name of the output object (used as json_schema name and in the instructions). */
  name?: string;
  temperature?: number;
  maxTokens?: number;
  /**
   * json_object (default) is understood by nearly every OpenAI-compatible server (GLM, Ollama,
   * vLLM); the JSON schema is then given in the system message. json_schema asks OpenAI-style
   * structured output (non-strict, since optional fields are not allowed in strict mode).
   */
  responseFormat?: "json_object" | "json_schema";
  signal?: AbortSignal;
  /** Epoch ms, a drain's cut (drain-deadline.ts): no retry starts whose wait ends past it (retryWait). */
  deadline?: number;
}

export interface Llm {
  readonly model: string;
  completeJson<S extends z.ZodType>(
    schema: S,
    messages: PromptMessage[],
    opts?: CompleteJsonOptions,
  ): Promise<LlmResult<z.infer<S>>>;
  /** Usage summed over every call of this client (for logs and job results). */
  readonly totalUsage: LlmUsage;
}

/** The model answered, twice, with something that is not valid JSON for the schema. */
export class LlmOutputError extends Error {
  override name = "LlmOutputError";
  constructor(message: string, readonly raw: string, readonly usage: LlmUsage) {
    super(message);
  }
}

/** The provider could not be reached or kept failing (after retries), or refused the request. */
export class LlmRequestError extends Error {
  override name = "LlmRequestError";
  constructor(
    message: string,
    readonly status: number | undefined,
    readonly retryable: boolean,
    readonly usage: LlmUsage,
  ) {
    super(message);
  }
}

export interface LlmOptions {
  retry?: Partial<RetryPolicy>;
  /** Injected in tests to observe waits; defaults to setTimeout. */
  sleep?: (ms: number) => Promise<void>;
  fetch?: typeof fetch;
}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Undefined when no LLM is configured: callers fall back to rule-based extraction. */
export function createLlm(config: Pick<Config, "llm">, opts: LlmOptions = {}): Llm | undefined {
  const { apiKey, baseUrl, model, timeoutMs } = config.llm;
  if (!apiKey && !baseUrl) return undefined;
  const client = new OpenAI({
    // Local OpenAI-compatible servers (Ollama, vLLM) accept any key; the SDK insists on one.
    apiKey: apiKey ?? "not-needed",
    baseURL: baseUrl,
    timeout: timeoutMs,
    maxRetries: 0,
    fetch: opts.fetch,
  });
  return new OpenAiLlm(client, model, { ...DEFAULT_RETRY, ...opts.retry }, opts.sleep ?? defaultSleep);
}

class OpenAiLlm implements Llm {
  readonly totalUsage: LlmUsage = emptyUsage();

  constructor(
    private readonly client: OpenAI,
    readonly model: string,
    private readonly retry: RetryPolicy,
    private readonly sleep: (ms: number) => Promise<void>,
  ) {}

  async completeJson<S extends z.ZodType>(
    schema: S,
    messages: PromptMessage[],
    opts: CompleteJsonOptions = {},
  ): Promise<LlmResult<z.infer<S>>> {
    const usage: LlmUsage = emptyUsage();
    const name = opts.name ?? "result";
    const jsonSchema = z.toJSONSchema(schema, { unrepresentable: "any" });
    const format = opts.responseFormat ?? "json_object";
    const instructions = `Reply with ONE JSON object only (no prose, no code fences) that matches this JSON schema ` +
      `(name: ${name}):\n${JSON.stringify(jsonSchema)}`;
    // The format instructions ride on the first system message (some servers accept only one).
    const conversation: PromptMessage[] = messages[0]?.role === "system"
      ? [{ role: "system", content: `${messages[0].content}\n\n${instructions}` }, ...messages.slice(1)]
      : [{ role: "system", content: instructions }, ...messages];

    let raw = await this.chat(conversation, format, name, jsonSchema, opts, usage);
    let outcome = parseAgainst(schema, raw);
    let repaired = false;
    if (!outcome.ok) {
      // One repair round trip: show the model its answer and what is wrong with it.
      conversation.push({ role: "assistant", content: raw });
      conversation.push({
        role: "user",
        content:
          `Your previous reply was rejected: ${outcome.error}. Reply again with only the corrected JSON object matching the schema.`,
      });
      raw = await this.chat(conversation, format, name, jsonSchema, opts, usage);
      outcome = parseAgainst(schema, raw);
      if (!outcome.ok) {
        throw new LlmOutputError(
          `LLM output invalid after one repair attempt: ${outcome.error}`,
          raw.slice(0, 2000),
          usage,
        );
      }
      repaired = true;
    }
    return { value: outcome.value, usage, model: this.model, repaired };
  }

  /** One chat completion with transient-failure retries; returns the message text. */
  private async chat(
    messages: PromptMessage[],
    format: "json_object" | "json_schema",
    name: string,
    jsonSchema: unknown,
    opts: CompleteJsonOptions,
    usage: LlmUsage,
  ): Promise<string> {
    for (let attempt = 0;; attempt++) {
      usage.requests++;
      this.totalUsage.requests++;
      try {
        const completion = await this.client.chat.completions.create(
          {
            model: this.model,
            messages,
            temperature: opts.temperature ?? 0,
            ...(opts.maxTokens ? { max_tokens: opts.maxTokens } : {}),
            response_format: format === "json_schema"
              ? {
                type: "json_schema",
                json_schema: { name, schema: jsonSchema as Record<string, unknown>, strict: false },
              }
              : { type: "json_object" },
          },
          { signal: opts.signal },
        );
        addApiUsage(usage, this.totalUsage, completion.usage);
        const content = completion.choices?.[0]?.message?.content;
        return typeof content === "string" ? content : "";
      } catch (err) {
        const transient = classify(err);
        const wait = retryWait(transient, attempt, this.retry, opts.deadline);
        if (wait === undefined) {
          const what = transient.status ? `HTTP ${transient.status}` : transient.kind;
          throw new LlmRequestError(
            `LLM request failed (${what}) after ${attempt + 1} attempt(s): ${(err as Error).message}`,
            transient.status,
            transient.retryable,
            usage,
          );
        }
        await this.sleep(wait);
      }
    }
  }
}

function addApiUsage(
  one: LlmUsage,
  total: LlmUsage,
  u: { prompt_tokens?: number; completion_tokens?: number; total_tokens?: number } | undefined | null,
) {
  if (!u) return;
  for (const target of [one, total]) {
    target.promptTokens += u.prompt_tokens ?? 0;
    target.completionTokens += u.completion_tokens ?? 0;
    target.totalTokens += u.total_tokens ?? (u.prompt_tokens ?? 0) + (u.completion_tokens ?? 0);
  }
}

type Parsed<T> = { ok: true; value: T } | { ok: false; error: string };

/** JSON.parse + schema check; tolerates a ```json fence, which some models add despite the format. */
export function parseAgainst<S extends z.ZodType>(schema: S, raw: string): Parsed<z.infer<S>> {
  let text = raw.trim().replace(/^```(?:json)?\s*/i, "");
  if (text.endsWith("```")) text = trimEndOf(text.slice(0, -3));
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return { ok: false, error: `not valid JSON (${(err as Error).message})` };
  }
  const result = schema.safeParse(value);
  if (!result.success) {
    return { ok: false, error: `does not match the schema (${issuesText(result.error.issues, "(root)", 10)})` };
  }
  return { ok: true, value: result.data };
}
