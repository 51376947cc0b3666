// What an agent reads of each tool's result: short plain text, ids included so it can act on a
// memory next (correct_fact, confirm_fact, explain_fact …). The HTTP API's answer as it is comes
// as structured content only to a client that asks for it (results.ts): for most agents this text
// is all the model reads, so where the agent asked for a memory itself (query_memory's
// return: "full", explain_fact's subject) its whole content is here, not a clipped line.
import type { AssembleResponse } from "../_shared/context/assemble.ts";
import type { EntityProfile } from "../_shared/memories/entities.ts";
import type { Explanation } from "../_shared/memories/explain.ts";
import type { LifecycleResponse, Memory } from "../_shared/memories/schemas.ts";
import type { MemoryStats } from "../_shared/memories/stats.ts";
import type { QueryResponse, RetrieveResponse } from "../_shared/retrieval/schemas.ts";
import type { MemoryHistory, WeakFacts } from "../_shared/services/memory-reads.ts";

const MAX_LINE = 300;

function clip(text: string, max = MAX_LINE): string {
  const one = text.replace(/\s+/g, " ").trim();
  return one.length > max ? `${one.slice(0, max - 1)}…` : one;
}

function memoryLine(m: Pick<Memory, "id" | "content" | "namespace">): string {
  return `- [${m.id}] ${clip(m.content)} (${m.namespace})`;
}

/** Which signals found a memory: "keyword #1, vector #3 (0.41)". */
function signalsText(s: RetrieveResponse["memories"][number]["signals"]): string {
  const parts: string[] = [];
  if (s.keyword) parts.push(`keyword #${s.keyword.rank}`);
  if (s.vector) parts.push(`vector #${s.vector.rank} (${s.vector.similarity.toFixed(2)})`);
  if (s.graph) parts.push(`graph #${s.graph.rank} via ${s.graph.edge}`);
  return parts.join(", ") || "no signal";
}

export function searchText(r: RetrieveResponse): string {
  if (r.memories.length === 0) {
    return `No memory matches (searched as a ${r.search.intent} question, ${r.search.mode}).`;
  }
  const lines = [
    r.block || "(no memory fit the budget)",
    "",
    `Found ${r.memories.length} (${r.search.mode}, intent ${r.search.intent}):`,
  ];
  for (const m of r.memories) {
    lines.push(
      `- [${m.id}] score ${m.score.toFixed(2)}, ${signalsText(m.signals)}${m.injected ? "" : ", not in the block"}`,
    );
  }
  return lines.join("\n");
}

export function queryText(r: QueryResponse): string {
  if (r.results.length === 0) return `Nothing ${r.agent} may read matches.${r.hint ? ` ${r.hint}` : ""}`;
  return r.results.map((m) => "text" in m ? `- [${m.id}] ${m.text}` : `- [${m.id}] [${m.category}] ${m.content}`)
    .join("\n");
}

export function rememberText(r: { created: boolean; memory: Memory; project: string | null }): string {
  const where = `${r.memory.namespace}${r.project === null ? "" : ` (project ${r.project})`}`;
  return r.created
    ? `Remembered as ${r.memory.id} in ${where}.`
    : `Already remembered as ${r.memory.id} in ${where}; nothing new was written.`;
}

export function correctText(r: { created: boolean; memory: Memory; superseded: Memory }): string {
  return r.created
    ? `Corrected: ${r.memory.id} now says "${clip(r.memory.content)}" and replaces ${r.superseded.id}.`
    : `Corrected: ${r.memory.id} already said "${
      clip(r.memory.content)
    }"; it replaces ${r.superseded.id}, nothing new was written.`;
}

/** A confirmation is always recorded (history CONFIRM), pinned already or not. */
export function confirmText(r: LifecycleResponse): string {
  return `Confirmed ${r.memory.id}: pinned at full strength, it never decays.`;
}

export function forgetText(r: LifecycleResponse): string {
  return r.changed
    ? `Forgot ${r.memory.id}: it is out of search now and purged after ${r.memory.purge_at} unless restore_memory brings it back.`
    : `${r.memory.id} was already forgotten: nothing changed.`;
}

export function restoreText(r: LifecycleResponse): string {
  if (r.changed && r.memory.superseded_by) {
    return `Restored ${r.memory.id}, replaced by ${r.memory.superseded_by}: that memory says the fact now.`;
  }
  return r.changed
    ? `Restored ${r.memory.id}: active again at strength ${r.memory.strength.toFixed(2)}.`
    : `${r.memory.id} is active already: nothing changed.`;
}

export function explainText(e: Explanation): string {
  const m = e.memory;
  const lines = [
    `[${m.id}] ${m.content}`,
    `${m.memory_type} in ${m.namespace}; source ${e.source.source ?? "none"}, recorded ${e.source.created_at}` +
    `${e.source.actor ? ` by ${e.source.actor}` : ""}; ${m.is_valid ? "valid" : "no longer valid"}, ${m.state}.`,
  ];
  if (e.current_id !== m.id) lines.push(`Replaced: the current version is ${e.current_id}.`);
  for (const link of e.supersedes) lines.push(`Replaces [${link.memory.id}] ${clip(link.memory.content, 120)}`);
  if (e.source.episodes.length > 0) {
    lines.push(`Derived from ${e.source.episodes.length} message(s):`);
    for (const ep of e.source.episodes.slice(0, 5)) {
      lines.push(`- ${ep.role ?? "?"} at ${ep.at}: ${clip(ep.content, 160)}`);
    }
  }
  if (e.entities.length > 0) {
    lines.push(`Mentions: ${e.entities.map((x) => `${x.canonical_name} (${x.entity_type})`).join(", ")}.`);
  }
  if (e.relations.length > 0) {
    lines.push(
      `Edges: ${
        e.relations.map((r) => `${r.relation_type} ${r.direction === "outgoing" ? "→" : "←"} ${r.other.id}`).join("; ")
      }.`,
    );
  }
  lines.push(
    e.decay.protected
      ? `Never decays (${e.decay.reason}).`
      : `Strength ${e.decay.predicted_strength.toFixed(2)}${
        e.decay.days_until_prune === null ? "" : `; pruned in ${e.decay.days_until_prune} days unless used`
      }.`,
  );
  return lines.join("\n");
}

export function statsText(s: MemoryStats): string {
  const counts = (o: Record<string, number>) => Object.entries(o).map(([k, n]) => `${k} ${n}`).join(", ") || "none";
  return [
    `${s.total} memories: ${counts(s.by_memory_type)}.`,
    `State: ${
      counts(s.by_state)
    }; valid ${s.validity.valid}, superseded ${s.validity.superseded}; pinned ${s.pinned.pinned}.`,
    `Relations ${s.relations.total} (${counts(s.relations.by_type)}); history ${s.history.total} events.`,
    `Top namespaces: ${s.namespaces.top.map((n) => `${n.namespace} ${n.count}`).join(", ") || "none"}.`,
  ].join("\n");
}

export function weakText(w: WeakFacts): string {
  if (w.memories.length === 0) return "Nothing is decaying: every memory is strong or protected.";
  return [
    `Weakest first (decay ${w.decay_per_day} a day, pruned below ${w.prune_threshold}); confirm_fact keeps one:`,
    ...w.memories.map((f) =>
      `- [${f.memory.id}] ${clip(f.memory.content, 160)} (strength ${f.predicted_strength.toFixed(2)}` +
      `${f.days_until_prune === null ? "" : `, pruned in ${f.days_until_prune} days`})`
    ),
  ].join("\n");
}

export function historyText(h: MemoryHistory): string {
  const head = `${h.history.length} event(s) of ${h.memory_id}${
    h.purged ? " (purged; its history remains)" : ""
  }, newest first:`;
  return [
    head,
    ...h.history.map((e) =>
      `- ${e.ts} ${e.event}${e.actor ? ` by ${e.actor}` : ""}${e.new_content ? `: ${clip(e.new_content, 160)}` : ""}`
    ),
    ...(h.next_cursor ? [`Older events: call again with cursor "${h.next_cursor}".`] : []),
  ]
    .join("\n");
}

export function entityText(p: EntityProfile): string {
  const e = p.entity;
  return [
    `${e.canonical_name} (${e.entity_type}) [${e.id}], ${e.mention_count} mention(s)${
      e.aliases.length ? `, also ${e.aliases.join(", ")}` : ""
    }.`,
    ...(e.summary ? [e.summary] : []),
    ...(p.facts.length
      ? ["Facts, newest first:", ...p.facts.slice(0, 10).map(memoryLine)]
      : ["No fact mentions it yet."]),
    ...(p.timeline.length ? [`Named in ${p.timeline.length} message(s), the last at ${p.timeline.at(-1)!.at}.`] : []),
  ].join("\n");
}

export function contextText(r: AssembleResponse): string {
  const tiers = Object.entries(r.tiers).filter(([, t]) => t.memories > 0).map(([name, t]) => `${name} ${t.memories}`);
  const footer = `(${r.token_count} of ${r.budget} tokens${tiers.length ? `; ${tiers.join(", ")}` : ""}` +
    `${r.excluded.length ? `; ${r.excluded.length} left out by lineage` : ""})`;
  return r.context ? `${r.context}\n\n${footer}` : `Nothing in memory bears on this yet ${footer}.`;
}
