// Secrets out of JSON kept whole (a transcript queued for extraction, a checkpoint's state): every
// string at any depth, keys included, through the one redactor (redact.ts), and well-formed (a lone
// surrogate becomes U+FFFD, which jsonb can store). A key that held a secret becomes its marker, so
// two keys of one object can become the same key: each such collision is reported, and the writer
// decides (a checkpoint refuses the save; a transcript keeps the last's value).
import { addCounts, MAY_HOLD_SECRET, type Redaction, type RedactionCounts, redactSecrets } from "./redact.ts";
import { type JsonPath, mapJsonStrings } from "./unsafe-characters.ts";
import { checkJsonText } from "./json-text.ts";
import { MAX_JSON_DEPTH } from "./http.ts";
import { EventLoopSlice } from "./event-loop-slice.ts";

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
 * replaced. For transcripts a writer stores (memory-extract's job payload, up to 8 MiB): a message
 * at a time, the event loop given back every SLICE_MS (event-loop-slice.ts). Redacted in one
 * stretch, 9 MB of small JSON messages held it 1.8 s, other tenants' requests on the instance waiting.
 */
export async function redactMessages<M extends ChatLike>(
  messages: readonly M[],
  slice = new EventLoopSlice(),
): Promise<{ messages: M[]; counts: RedactionCounts; total: number }> {
  const counts: RedactionCounts = {};
  let total = 0;
  const out: M[] = [];
  for (const m of messages) {
    if (slice.due()) await slice.yield();
    // Its strings in slices too: one message may hold most of the body (a message's unknown fields
    // are kept), and 83,000 keys of one, redacted in one stretch, held the loop 0.5-1.6 s.
    const r = await redactJsonSliced(m, slice);
    out.push(r.value);
    addCounts(counts, r.counts);
    total += r.total;
  }
  return { messages: out, counts, total };
}

/** A string well-formed (a lone surrogate U+FFFD) and redacted: what redactJson does to each. */
function redactWellFormed(s: string): Redaction {
  return redactString(s.isWellFormed() ? s : s.toWellFormed());
}

/** A JSON value well-formed and with every string redacted, keys included (see above). */
export function redactJson<T>(value: T, redactOne: (s: string) => Redaction = redactWellFormed): JsonRedaction<T> {
  const counts: RedactionCounts = {};
  let total = 0;
  const collisions: KeyCollision[] = [];
  const out = mapJsonStrings(value, (s) => {
    const r = redactOne(s);
    addCounts(counts, r.counts);
    total += r.total;
    return r.text;
  }, (path, key) => collisions.push({ path, key }));
  return { value: out, counts, total, collisions };
}

/**
 * redactJson for a state a writer stores (a checkpoint's, up to MAX_CHECKPOINT_BYTES): its strings
 * redacted a slice at a time (event-loop-slice.ts), then put in their places. Redacted in one
 * stretch, a 5 MB state of 20,000 tool outputs held the event loop 1.0-1.2 s, every other request
 * on the instance waiting. Walking the value is cheap; one string is still redacted whole.
 */
export async function redactJsonSliced<T>(value: T, slice = new EventLoopSlice()): Promise<JsonRedaction<T>> {
  const strings = await jsonStrings(value, slice);
  const redacted = new Map<string, Redaction>();
  let changed = false;
  for (const s of strings) {
    if (slice.due()) await slice.yield();
    const r = redactWellFormed(s);
    changed ||= r.text !== s;
    redacted.set(s, r);
  }
  // Nothing to replace: the value as it is, not built again (an object of 83,000 keys: 130-300 ms in one stretch).
  if (!changed) return { value, counts: {}, total: 0, collisions: [] };
  return redactJson(value, (s) => redacted.get(s)!);
}

/**
 * Every string of a JSON value, keys included, once each: a walk that builds nothing else, a slice
 * at a time (the walk of one message of 80,000 keys was one stretch of the loop).
 */
async function jsonStrings(value: unknown, slice: EventLoopSlice): Promise<Set<string>> {
  const strings = new Set<string>();
  const pending = [value];
  let steps = 0;
  const step = () => ++steps % 256 === 0 && slice.due();
  while (pending.length > 0) {
    const v = pending.pop();
    if (typeof v === "string") strings.add(v);
    else if (Array.isArray(v)) { for (const x of v) pending.push(x); }
    else if (v && typeof v === "object") {
      for (const k in v) {
        strings.add(k);
        pending.push((v as Record<string, unknown>)[k]);
        if (step()) await slice.yield();
      }
    }
    if (step()) await slice.yield();
  }
  return strings;
}

/**
 * A text redacted as redactSecrets reads it, and the JSON it holds read as JSON too: a tool call's
 * arguments (`{"file_path": ".env", "content": "POSTGRES_PASSWORD: postgres\\n"}`), a tool's JSON
 * output, a hook's `[Write] {…}` line. Read as text, a file's lines inside a JSON string are one
 * escaped line (`\\n` is two characters), where no password stands alone on its line and
 * `\\npassword=` names `npassword`: a config file an agent wrote went to the extraction job's
 * payload, the models and the compaction summary with its passwords. So the JSON's strings, keys
 * included, are redacted as what they say; a JSON without a secret in its strings is kept as sent
 * (its digest unchanged), one with is written again (JSON.stringify) with the markers in.
 */
export function redactString(text: string): Redaction {
  const inside = jsonInside(text);
  const literals = escapedLiterals(inside?.text ?? text);
  const outer = redactSecrets(literals?.text ?? inside?.text ?? text);
  const counts = [inside, literals].reduce((c, r) => r ? addCounts(c, r.counts) : c, {} as RedactionCounts);
  return {
    ...outer,
    counts: addCounts(counts, outer.counts),
    total: (inside?.total ?? 0) + (literals?.total ?? 0) + outer.total,
  };
}

/**
 * The JSON string literals anywhere in a text that hold escapes, redacted as what they say: the
 * JSON a text does not end with, or not alone (`Ran f({x}) then [Write] {…}`, `{…}\n(exit 0)`,
 * one JSON value a line) is not parsed whole, and an INI's `password=` in its escaped `content`
 * passed. One pass over the text (a literal not closed on its line is skipped whole, so no
 * character is read more than twice); a literal whose redaction changes it is written again.
 */
function escapedLiterals(text: string): { text: string; counts: RedactionCounts; total: number } | undefined {
  let out = "";
  let from = 0;
  let total = 0;
  const counts: RedactionCounts = {};
  for (let i = text.indexOf('"'); i >= 0;) {
    let j = i + 1;
    let escapes = false;
    while (j < text.length && text[j] !== '"' && text[j] !== "\n") {
      if (text[j] === "\\") {
        escapes = true;
        j++; // the escaped character: a quote there does not end the literal
      }
      j++;
    }
    if (text[j] !== '"') {
      i = j < text.length ? text.indexOf('"', j) : -1;
      continue;
    }
    const literal = text.slice(i, j + 1);
    if (escapes && MAY_HOLD_SECRET.test(literal)) {
      let said: unknown;
      try {
        said = JSON.parse(literal);
      } catch {
        said = undefined;
      }
      const r = typeof said === "string" ? redactSecrets(said) : undefined;
      if (r && r.total > 0) {
        out += text.slice(from, i) + JSON.stringify(r.text);
        from = j + 1;
        total += r.total;
        addCounts(counts, r.counts);
      }
    }
    i = text.indexOf('"', j + 1);
  }
  return total === 0 ? undefined : { text: out + text.slice(from), counts, total };
}

/** Most items (values and keys) of JSON inside a string that is read as JSON; a bigger one is read as text. */
export const EMBEDDED_JSON_ITEMS = 10_000;

/** The JSON the text ends with (from its first `{` or `[`), its strings redacted; undefined when none holds a secret. */
function jsonInside(text: string): { text: string; counts: RedactionCounts; total: number } | undefined {
  const last = text.trimEnd().at(-1);
  if ((last !== "}" && last !== "]") || !MAY_HOLD_SECRET.test(text)) return undefined;
  for (const open of ["{", "["]) {
    const start = text.indexOf(open);
    if (start < 0) continue;
    const json = text.slice(start);
    // Deeper JSON is read as text only: its values would be walked recursively (a RangeError). So is
    // JSON of more items than EMBEDDED_JSON_ITEMS: one string is redacted in one stretch, and the
    // body's bound (MAX_JSON_ITEMS) does not count a string's insides: 0.9 MB of `{}`s in one
    // message's content held the event loop 2.6 s. The text rules still read its pairs
    // (`"password": "…"`), and escapedLiterals its escaped literals.
    const checked = checkJsonText(json, MAX_JSON_DEPTH, false, EMBEDDED_JSON_ITEMS);
    if (checked.tooDeep || checked.tooMany) continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(json);
    } catch {
      continue;
    }
    if (typeof parsed !== "object" || parsed === null) return undefined;
    const r = redactJson(parsed);
    return r.total === 0
      ? undefined
      : { text: text.slice(0, start) + JSON.stringify(r.value), counts: r.counts, total: r.total };
  }
  return undefined;
}
