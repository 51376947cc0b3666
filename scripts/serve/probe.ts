// Start-up checks of the model providers, so a misconfiguration is found before the first user
// request instead of as a 503 (embeddings) or a dead job (LLM) later:
//   embeddings  one embedding call: reachable, key accepted, 512 dimensions (what the database stores)
//   LLM         GET <base>/models: reachable and key accepted; the model's presence in the list is
//               reported, not required (servers name models differently: Ollama's `llama3` is
//               listed as `llama3:latest`)
// A failure that can only be a misconfiguration (unreachable, refused key, wrong dimension,
// unknown embedding model) throws ConfigError: the server refuses to start and says why.
import OpenAI from "openai";
import { EMBEDDING_DIMENSIONS, openAiEmbedder } from "../../supabase/functions/_shared/embeddings.ts";
import { supabaseAiEmbedder } from "../../supabase/functions/_shared/supabase-ai-embedder.ts";
import { type Config, ConfigError } from "../../supabase/functions/_shared/env.ts";

export interface ProbeReport {
  /** One line each for the banner. */
  embeddings: string;
  llm: string;
}

const PROBE_TIMEOUT_MS = 15_000;

function where(baseUrl: string | undefined): string {
  return baseUrl ?? "https://api.openai.com/v1";
}

export async function probeEmbedder(config: Pick<Config, "embedding">): Promise<string> {
  const e = config.embedding;
  if (e.provider === "local") {
    return `local (${e.model}): deterministic hashed n-grams, ${EMBEDDING_DIMENSIONS} dimensions, no provider`;
  }
  // Refused here with its reason: only the Edge Runtime has Supabase.ai, and this server is Deno.
  if (e.provider === "supabase") return `${supabaseAiEmbedder().model} in the Edge Runtime (Supabase.ai)`;
  const embedder = openAiEmbedder({
    apiKey: e.apiKey ?? "not-needed",
    baseUrl: e.baseUrl,
    model: e.model,
    maxAttempts: 1,
    timeoutMs: PROBE_TIMEOUT_MS,
  });
  const started = performance.now();
  let dims: number;
  try {
    const [vector] = await embedder.embed(["devai-memory start-up probe"]);
    dims = vector?.length ?? 0;
  } catch (err) {
    throw new ConfigError(
      `embeddings: ${e.model} at ${where(e.baseUrl)} failed the start-up probe: ${(err as Error).message} ` +
        "(check EMBEDDING_BASE_URL / OPENAI_BASE_URL, EMBEDDING_MODEL and EMBEDDING_API_KEY / OPENAI_API_KEY; unset them all for the local embedder)",
    );
  }
  if (dims !== EMBEDDING_DIMENSIONS) {
    throw new ConfigError(
      `embeddings: ${e.model} at ${
        where(e.baseUrl)
      } returned ${dims} dimensions; the database stores ${EMBEDDING_DIMENSIONS}`,
    );
  }
  return `${e.model} at ${where(e.baseUrl)}: ${dims} dimensions, answered in ${
    Math.round(performance.now() - started)
  } ms`;
}

export async function probeLlm(config: Pick<Config, "llm">): Promise<string> {
  const { apiKey, baseUrl, model } = config.llm;
  if (!apiKey && !baseUrl) return 'none: rule-based extraction of explicit "remember ..." statements and corrections';
  const client = new OpenAI({
    apiKey: apiKey ?? "not-needed",
    baseURL: baseUrl,
    maxRetries: 0,
    timeout: PROBE_TIMEOUT_MS,
  });
  const at = `${model} at ${where(baseUrl)}`;
  let served: string[];
  try {
    served = [];
    for await (const m of client.models.list()) served.push(m.id);
  } catch (err) {
    const status = err instanceof OpenAI.APIError ? err.status : undefined;
    if (status === 401 || status === 403) {
      throw new ConfigError(`LLM: ${at} refused the key (HTTP ${status}): check LLM_API_KEY / OPENAI_API_KEY`);
    }
    if (status !== undefined && status < 500) return `${at}: reachable (it does not list its models: HTTP ${status})`;
    throw new ConfigError(
      `LLM: ${at} is unreachable: ${
        (err as Error).message
      } (check LLM_BASE_URL / OPENAI_BASE_URL; unset LLM_BASE_URL and the keys to run without an LLM)`,
    );
  }
  if (served.includes(model) || served.includes(`${model}:latest`)) return `${at}: reachable, model listed`;
  const listed = served.slice(0, 8).join(", ") + (served.length > 8 ? ", …" : "");
  return `${at}: reachable, but ${model} is not in its model list (${listed || "empty"}): check LLM_MODEL`;
}

export async function probeProviders(config: Pick<Config, "embedding" | "llm">): Promise<ProbeReport> {
  const [embeddings, llm] = await Promise.all([probeEmbedder(config), probeLlm(config)]);
  return { embeddings, llm };
}
