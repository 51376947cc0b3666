// Compression levels of a memory (docs/context.md#compression-levels): the full text, a summary,
// a compressed form ("auth: JWT→sessions (size)") and an index key ("auth_refactor"). A model
// makes them when it writes or consolidates a memory (metadata.compression, valid only for the
// content it was made from); otherwise this module's offline compressor does, deterministically
// and without a model: the first sentence for the summary, the salient terms (identifiers, names,
// content words, a few "from X to Y" rewrites) for the compressed form, the two most salient
// terms for the index key.
import { createHash } from "node:crypto";
import { z } from "zod";
import { bulletText } from "../fit-text.ts";
import { trimEndOf } from "../text-scan.ts";
import { stripUnsafeCharacters } from "../unsafe-characters.ts";

export const LEVELS = ["full", "summary", "compressed", "index"] as const;
export type Level = typeof LEVELS[number];

export interface CompressionForms {
  summary: string;
  compressed: string;
  index: string;
  /** Who made each form: the model (stored with the memory) or the offline compressor. */
  by: "llm" | "rules" | "mixed";
}

/** A memory's index key: one token naming its topic (`auth_refactor`). */
export const indexKey = z.string().trim().min(1).max(60)
  .regex(/^[\p{L}\p{N}_.:/@#+-]+$/u, "an index key is 1-60 letters, digits and _ . : / @ # + - (one token)");

/** A memory's one-sentence summary and its compressed form (docs/context.md#compression-levels). */
export const summaryText = z.string().trim().min(1).max(280);
export const compressedText = z.string().trim().min(1).max(120);

/** The forms a model may propose for a memory (extraction, consolidation); invalid ones are dropped, not fatal. */
export const compressionFields = {
  summary: summaryText.optional().catch(undefined),
  compressed: compressedText.optional().catch(undefined),
  index_key: indexKey.optional().catch(undefined),
};

/** Short digest of a memory's content: a stored form is used only for the content it was made from. */
export function contentDigest(content: string): string {
  return createHash("sha256").update(bulletText(content)).digest("hex").slice(0, 16);
}

/** metadata.compression for a model's forms (undefined when it gave none); stored text, so the unsafe characters go. */
export function storedCompression(content: string, f: { summary?: string; compressed?: string; index_key?: string }) {
  const summary = f.summary && stripUnsafeCharacters(f.summary).trim();
  const compressed = f.compressed && stripUnsafeCharacters(f.compressed).trim();
  const index = f.index_key && stripUnsafeCharacters(f.index_key).trim();
  if (!summary && !compressed && !index) return undefined;
  return {
    ...(summary ? { summary } : {}),
    ...(compressed ? { compressed } : {}),
    ...(index ? { index } : {}),
    by: "llm",
    for: contentDigest(content),
  };
}

// English function words and the fillers of agent notes; negations are kept ("never", "not").
const STOP = new Set(
  ("a an the and or but if then else of to in on at by for with from into onto over under about as is are was were be been being " +
    "this that these those it its it's they them their there here we our us you your i me my he she his her which who whom whose " +
    "what when where why how all any both each few more most other some such only own same so than too very can will just should " +
    "would could may might must shall do does did doing done has have had having also because due since while after before during " +
    "up down out off again further once per via etc e.g i.e team decided agreed noted note remember mentioned prefers prefer wants " +
    "want uses use used using strongly especially important").split(" "),
);
const NEGATIONS = new Set(["not", "never", "no", "without"]);

const TOKEN = /[\p{L}\p{N}_@./:#$+<>,→-]+/gu;

/** An identifier as the keyword search reads one (file paths, codes, versions, snake/camelCase, dotted names). */
function isIdentifier(t: string): boolean {
  return /\p{L}/u.test(t) && t.length >= 3 &&
    (/[_@/$#<>]/.test(t) || /[\p{L}\p{N}]\.[\p{L}\p{N}]/u.test(t) || /\p{L}\p{N}|\p{N}\p{L}/u.test(t) ||
      /\p{Ll}\p{Lu}/u.test(t) ||
      /[\p{L}\p{N}]-[\p{L}\p{N}]/u.test(t) || /→/.test(t));
}

interface Term {
  text: string;
  pos: number;
  salience: number;
}

/** "moved from X to Y", "replaced X with Y" → "X→Y"; "X instead of Y" → "X over Y". */
function rewriteChanges(text: string): string {
  return text
    .replace(
      /\b(?:switch(?:ed)?|mov(?:ed|e|ing)|migrat(?:ed|e|ing)|chang(?:ed|e|ing)|went)\s+from\s+(\S+)\s+to\s+(\S+)/giu,
      "$1→$2",
    )
    .replace(/\breplac(?:ed|es|e|ing)\s+(\S+)\s+(?:with|by)\s+(\S+)/giu, "$1→$2")
    // (?<!\S): X starts where its word does (the leftmost match anyway), so a long word is scanned
    // once, not once from each of its characters.
    .replace(/(?<!\S)(\S+)\s+instead\s+of\s+(\S+)/giu, "$1 over $2");
}

function termsOf(content: string): Term[] {
  const text = rewriteChanges(bulletText(content));
  const out: Term[] = [];
  const seen = new Set<string>();
  let pos = 0;
  let atSentenceStart = true; // the text's first token, or one after . ! ?
  for (const m of text.matchAll(TOKEN)) {
    const sentenceStart = atSentenceStart;
    atSentenceStart = /[.!?]$/.test(m[0]) ||
      /^\s*[.!?]/.test(text.slice(m.index + m[0].length, m.index + m[0].length + 4));
    // The trailing trim is a scan: a pattern anchored at the end re-reads a punctuation run once
    // per position in it.
    const raw = trimEndOf(m[0].replace(/^[.,:/#-]+/u, ""), ".,:;/#-");
    pos++;
    if (raw.length === 0 || !/[\p{L}\p{N}]/u.test(raw)) continue;
    const lower = raw.toLowerCase();
    if (seen.has(lower)) continue;
    const negation = NEGATIONS.has(lower);
    if (!negation && (STOP.has(lower) || (raw.length < 2 && !/\p{N}/u.test(raw)))) continue;
    seen.add(lower);
    const salience = negation
      ? 0.5
      : isIdentifier(raw) || /^\p{Lu}{2,}\p{N}*$/u.test(raw)
      ? 3
      : /^\p{Lu}/u.test(raw) && !sentenceStart
      ? 2
      : 1;
    out.push({ text: raw, pos, salience });
  }
  return out;
}

/** The first sentence, at most 30 words (the rest marked …). */
export function offlineSummary(content: string): string {
  const one = bulletText(content);
  const first = one.split(/(?<=[.!?])\s+(?=[\p{Lu}\p{N}`"'(\[])/u)[0] ?? one;
  const words = first.split(" ");
  return words.length > 30 ? `${trimEndOf(words.slice(0, 30).join(" "), ",;:.")}…` : first;
}

/**
 * "topic: term term …": the most salient term, then the others in the order they came, at most 9
 * and at most 60% of the summary's length (so each level is shorter than the one before).
 */
export function offlineCompressed(
  content: string,
  terms = termsOf(content),
  summary = offlineSummary(content),
): string {
  if (terms.length === 0) return summary;
  const topic = [...terms].sort((a, b) => b.salience - a.salience || a.pos - b.pos)[0]!;
  const limit = Math.max(24, Math.floor(summary.length * 0.6));
  let out = topic.text;
  for (const t of terms.filter((t) => t !== topic).slice(0, 9)) {
    const next = out === topic.text ? `${out}: ${t.text}` : `${out} ${t.text}`;
    if (next.length > limit) break;
    out = next;
  }
  return out.length < summary.length ? out : summary;
}

/** The two most salient terms, in text order, as one snake_case key (file paths by their name without extension). */
export function offlineIndexKey(content: string, terms = termsOf(content)): string {
  const top = terms
    .filter((t) => t.salience >= 1)
    .sort((a, b) => b.salience - a.salience || a.pos - b.pos)
    .slice(0, 2)
    .sort((a, b) => a.pos - b.pos);
  const part = (
    t: string,
  ) => (t.includes("/") ? (t.split("/").filter(Boolean).at(-1) ?? t).replace(/\.\p{L}{1,5}$/u, "") : t);
  const key = top.map((t) => part(t.text)).join("_").toLowerCase().replace(/[^\p{L}\p{N}]+/gu, "_").replace(
    /^_+|_+$/g,
    "",
  );
  return (key || "note").slice(0, 40).replace(/_+$/, "");
}

export function offlineForms(content: string): Omit<CompressionForms, "by"> {
  const terms = termsOf(content);
  const summary = offlineSummary(content);
  return { summary, compressed: offlineCompressed(content, terms, summary), index: offlineIndexKey(content, terms) };
}

const storedString = (
  v: unknown,
  max: number,
) => (typeof v === "string" && v.trim().length > 0 && v.length <= max ? v.trim() : undefined);

/** A memory's forms: the model's (metadata.compression, when made for this content), else the offline compressor's. */
export function formsOf(content: string, metadata: Record<string, unknown> | null | undefined): CompressionForms {
  const offline = offlineForms(content);
  const stored = metadata?.compression;
  if (!stored || typeof stored !== "object") return { ...offline, by: "rules" };
  const s = stored as Record<string, unknown>;
  if (s.for !== contentDigest(content)) return { ...offline, by: "rules" };
  const summary = storedString(s.summary, 280);
  const compressed = storedString(s.compressed, 120);
  const index = storedString(s.index, 60);
  const all = summary && compressed && index;
  const none = !summary && !compressed && !index;
  return {
    summary: summary ?? offline.summary,
    compressed: compressed ?? offline.compressed,
    index: index ?? offline.index,
    by: all ? "llm" : none ? "rules" : "mixed",
  };
}

/** The text of a memory at a level (full: the content on one line). */
export function textAt(content: string, forms: CompressionForms, level: Level): string {
  switch (level) {
    case "full":
      return bulletText(content);
    case "summary":
      return forms.summary;
    case "compressed":
      return forms.compressed;
    case "index":
      return forms.index;
  }
}
