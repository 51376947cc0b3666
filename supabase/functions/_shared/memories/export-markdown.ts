// Markdown export (seed 002's file store): one file per memory at
// `<memory_type>/<YYYY-MM-DD>-<slug>.md`, YAML front matter then the content. Returned as
// { path, content } pairs so a client writes them to disk unchanged; nothing is lost against the
// JSON export except embeddings, relations and history (front matter keeps every field a person
// filters by, memory.query's metadata filters and the code lineage included).
// Soft-deleted memories are included, flagged `state: soft_deleted` with their `purge_at`.
import type { Memory } from "./schemas.ts";
import { anyUuid } from "../schemas.ts";

const MAX_SLUG = 48;

/** Lower-case ASCII words of the content joined by '-', at most 48 characters; 'memory' if none. */
export function slugify(text: string): string {
  const words = text
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .match(/[a-z0-9]+/g) ?? [];
  let slug = "";
  for (const w of words) {
    const next = slug ? `${slug}-${w}` : w;
    if (next.length > MAX_SLUG) break;
    slug = next;
  }
  return slug || (words[0]?.slice(0, MAX_SLUG) ?? "") || "memory";
}

// Plain YAML scalars only when unambiguous; anything else is a JSON string, which YAML 1.2 reads
// as a double-quoted scalar with the same escapes. Plain means a UUID, or starting with a letter or
// '_' and not a YAML word: YAML 1.1 readers (PyYAML, js-yaml's default schema) turn a plain value
// starting with a digit into a date, an int or a float well beyond what a number looks like
// (`2024-01-15`, `0b101`, `1.2_3`, `1.`): a session or branch named so was read back as another value.
const PLAIN = /^[A-Za-z_][A-Za-z0-9_./@%+-]*$/;
const YAML_WORDS = /^(true|false|yes|no|on|off|null|y|n|~)$/i;
// The memory's own timestamps stay plain, as in seed 002 (`created_at: 2024-01-15T10:30:00Z`):
// YAML reads them as timestamps. A text field shaped like one (a session id) is quoted as any other.
const ISO_TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

export function yamlScalar(value: unknown): string {
  if (value === null || value === undefined) return "null";
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  const s = String(value);
  if (anyUuid.safeParse(s).success || (PLAIN.test(s) && !YAML_WORDS.test(s))) return s;
  return JSON.stringify(s);
}

/** One of the memory's timestamps (ISO, UTC): plain, so YAML reads a timestamp. */
function yamlTimestamp(value: string | null | undefined): string {
  return value && ISO_TIMESTAMP.test(value) ? value : yamlScalar(value);
}

function yamlList(values: unknown[]): string {
  return `[${values.map(yamlScalar).join(", ")}]`;
}

export function frontMatter(m: Memory): string {
  const meta = m.metadata ?? {};
  const keywords = Array.isArray(meta.keywords) ? meta.keywords : [];
  const fields: [string, string][] = [
    ["id", yamlScalar(m.id)],
    ["namespace", yamlScalar(m.namespace)],
    ["memory_type", yamlScalar(m.memory_type)],
    ["priority", yamlScalar(m.priority)],
    ["importance", yamlScalar(m.importance)],
    ["source", yamlScalar(m.source)],
    ["pinned", yamlScalar(m.pinned)],
    ["is_valid", yamlScalar(m.is_valid)],
    ["state", yamlScalar(m.state)],
    ["created_at", yamlTimestamp(m.created_at)],
    ["updated_at", yamlTimestamp(m.updated_at)],
    ["keywords", yamlList(keywords)],
  ];
  const optional: [string, unknown][] = [
    ["category", meta.category],
    ["purge_at", m.purge_at],
    ["superseded_by", m.superseded_by],
    ["session_id", m.session_id],
    ["agent_id", meta.agent_id],
    ["run_id", meta.run_id],
    ["actor_id", meta.actor_id],
    ["user_id", meta.user_id],
    ["role", meta.role],
    ["repo", meta.repo],
    ["branch", meta.branch],
    ["commit", meta.commit],
    ["embedding_model", m.embedding_model],
  ];
  for (const [k, v] of optional) {
    if (v !== null && v !== undefined) fields.push([k, k === "purge_at" ? yamlTimestamp(String(v)) : yamlScalar(v)]);
  }
  if (Array.isArray(meta.files) && meta.files.length > 0) fields.push(["files", yamlList(meta.files)]);
  fields.push(["strength", yamlScalar(Number(m.strength.toFixed(4)))]);
  return `---\n${fields.map(([k, v]) => `${k}: ${v}`).join("\n")}\n---\n`;
}

export function memoryToMarkdown(m: Memory): string {
  return `${frontMatter(m)}\n${m.content.trimEnd()}\n`;
}

/**
 * Paths for memories given in creation order (created_at, id), unique: a second memory with the
 * same date and slug gets the first 8 characters of its id appended, so re-exporting the same data
 * gives the same paths.
 *
 * Only paths of one date can collide (the date is in every path), and in creation order a date's
 * memories come together, so the paths used are kept for the current date only and forgotten when
 * it changes: the set holds one UTC day's memories, never the tenant's (it held every path, so an
 * export's memory grew with the tenant, against the README's bounded memory for any tenant).
 */
export class MarkdownPaths {
  readonly #used = new Set<string>();
  #date = "";

  /** How many paths are held now (at most the current date's). */
  get size(): number {
    return this.#used.size;
  }

  pathFor(m: Memory): string {
    const date = m.created_at.slice(0, 10);
    if (date !== this.#date) {
      this.#used.clear();
      this.#date = date;
    }
    const base = `${m.memory_type}/${date}-${slugify(m.content)}`;
    let path = `${base}.md`;
    if (this.#used.has(path)) path = `${base}-${m.id.slice(0, 8)}.md`;
    for (let n = 2; this.#used.has(path); n++) path = `${base}-${m.id.slice(0, 8)}-${n}.md`;
    this.#used.add(path);
    return path;
  }
}
