// The text of an assembled context (docs/context.md#what-it-looks-like), deterministic for the
// same items: a heading, then one section per non-empty tier in tier order, one bullet per
// memory (critical bullets tagged with why they are critical), and the index as two lines of
// pointers.
//
//   ## Working Context
//
//   ### Critical
//   - [decision] src/auth/login.ts: sessions live server-side in Redis; never decode the JWT in the client
//   - [unresolved] Deploys go out on Fridays ⟷ Deploys are frozen on Fridays
//
//   ### Relevant
//   - …
//
//   ### Background
//   - errors: Result<T,E> over try-catch
//
//   ### Index
//   Ask me about: auth_refactor, redis_sessions (memory.query or search_memory expands any of them)
//   Stale, check before use: login_guard (src/auth/old.ts deleted)
import { bulletText } from "../fit-text.ts";
import type { Level } from "./compress.ts";
import type { StaleCitation } from "./lineage.ts";
import { type Tier, TIERS } from "./tiers.ts";

export const CONTEXT_HEADING = "## Working Context";
export const TIER_TITLES: Readonly<Record<Tier, string>> = {
  critical: "### Critical",
  relevant: "### Relevant",
  background: "### Background",
  index: "### Index",
};
export const ASK_PREFIX = "Ask me about: ";
export const ASK_SUFFIX = " (memory.query or search_memory expands any of them)";
export const STALE_PREFIX = "Stale, check before use: ";

/** Why a critical memory is critical, as its bullet says it. */
export type CriticalTag = "decision" | "file" | "fix" | "error" | "unresolved";

/** One bullet of a fact tier: a memory (or an unresolved contradiction's two sides) at one level. */
export interface PlacedLine {
  id: string;
  /** The other side of an unresolved contradiction. */
  pairId?: string;
  tag?: CriticalTag;
  level: Level;
  text: string;
  pairText?: string;
}

export interface IndexPointer {
  id: string;
  key: string;
  stale?: StaleCitation;
}

export interface RenderInput {
  critical: readonly PlacedLine[];
  relevant: readonly PlacedLine[];
  background: readonly PlacedLine[];
  index: readonly IndexPointer[];
}

export function bulletLine(p: Pick<PlacedLine, "tag" | "text" | "pairText">): string {
  const text = p.pairText !== undefined ? `${bulletText(p.text)} ⟷ ${bulletText(p.pairText)}` : bulletText(p.text);
  return p.tag ? `- [${p.tag}] ${text}` : `- ${text}`;
}

export function staleNote(p: IndexPointer): string {
  const s = p.stale!;
  return s.reason === "deleted" ? `${p.key} (${s.file} deleted)` : `${p.key} (${s.file} → ${s.to})`;
}

export function askLine(keys: readonly string[]): string {
  return `${ASK_PREFIX}${keys.join(", ")}${ASK_SUFFIX}`;
}

export function staleLine(notes: readonly string[]): string {
  return `${STALE_PREFIX}${notes.join("; ")}`;
}

/** One tier's section ("" when it has nothing). */
export function renderTier(tier: Tier, input: RenderInput): string {
  if (tier === "index") {
    const ask = input.index.filter((p) => !p.stale).map((p) => p.key);
    const stale = input.index.filter((p) => p.stale).map(staleNote);
    const lines = [...(ask.length > 0 ? [askLine(ask)] : []), ...(stale.length > 0 ? [staleLine(stale)] : [])];
    return lines.length > 0 ? [TIER_TITLES.index, ...lines].join("\n") : "";
  }
  const lines = input[tier];
  return lines.length > 0 ? [TIER_TITLES[tier], ...lines.map(bulletLine)].join("\n") : "";
}

/** The whole context and each tier's section; "" when no tier has anything. */
export function renderContext(input: RenderInput): { text: string; sections: Record<Tier, string> } {
  const sections = Object.fromEntries(TIERS.map((t) => [t, renderTier(t, input)])) as Record<Tier, string>;
  const parts = TIERS.map((t) => sections[t]).filter((s) => s !== "");
  return { text: parts.length > 0 ? [CONTEXT_HEADING, ...parts].join("\n\n") : "", sections };
}
