// Secrets out of JSON kept whole (a transcript queued for extraction, a checkpoint's state): every
// string at any depth, keys included, through the one redactor (redact.ts), and well-formed (a lone
// surrogate becomes U+FFFD, which jsonb can store). A key that held a secret becomes its marker, so
// two keys of one object can become the same key: each such collision is reported, and the writer
// decides (a checkpoint refuses the save; a transcript keeps the last's value).
import { addCounts, type RedactionCounts, redactSecrets } from "./redact.ts";
import { type JsonPath, mapJsonStrings } from "./unsafe-characters.ts";

export interface ChatLike {
  content?: unknown;
  tool_calls?: unknown;
  [k: string]: unknown;
}

/** Two keys of one object that became `key`: the object's path (keys as redacted). */
export interface KeyCollision {
  path: JsonPath;
  key: string;
}

export interface JsonRedaction<T> {
  value: T;
  counts: RedactionCounts;
  total: number;
  /** Objects where two keys became one (the value kept is the last's). */
  collisions: KeyCollision[];
}

/**
 * A chat transcript with every string redacted, at any depth and keys included: contents, parts of
 * any type (text, refusal, an image's URL), tool calls' ids, names and arguments, a tool result's
 * tool_call_id, a message's name and whatever fields the format adds (messages are loose
 * objects). Only contents and tool call arguments were redacted before, and a token in a message's
 * `name` or a tool call's `id` was stored in the job's payload as sent. The counts of what was
 * replaced. For transcripts a writer stores (memory-extract's job payload).
 */
export function redactMessages<M extends ChatLike>(
  messages: readonly M[],
): { messages: M[]; counts: RedactionCounts; total: number } {
  const { value, counts, total } = redactJson(messages as M[]);
  return { messages: value, counts, total };
}

/** A JSON value well-formed and with every string redacted, keys included (see above). */
export function redactJson<T>(value: T): JsonRedaction<T> {
  const counts: RedactionCounts = {};
  let total = 0;
  const collisions: KeyCollision[] = [];
  const out = mapJsonStrings(value, (s) => {
    const r = redactSecrets(s.isWellFormed() ? s : s.toWellFormed());
    addCounts(counts, r.counts);
    total += r.total;
    return r.text;
  }, (path, key) => collisions.push({ path, key }));
  return { value: out, counts, total, collisions };
}
