// From candidates to tiers (docs/context.md#tiers), pure: which tier each memory belongs to, its
// rank there, and which memories are left out because of their lineage (another branch's work in
// progress) or flagged stale (they cite a file deleted or renamed since).
//
// A memory goes to the first tier it qualifies for:
//   critical    both sides of an open contradiction, both shown ([unresolved]); a memory citing the current
//               file ([decision] when its category is decisions, architecture or conventions,
//               else [file]); a decision or architecture memory citing a file of the current
//               file's directory ([decision]); an error search hit that names most of the error
//               (keyword coverage ≥ 0.5) or is an errors_and_fixes / error_resolution memory
//               ([fix]); an error memory of the last 24 hours while debugging ([error])
//   relevant    every other hit of the searches and of the file, directory and branch lookups
//   background  the conventions, workflows and the activity's categories no search found
// (A memory citing the current file that is also an error's fix is tagged [fix].)
// Within a tier: critical by tag (unresolved, decision, fix, file, error), then score; the others
// by score = relevance × strength × usage + boosts (retrieval/rank.ts), × LINEAGE_BOOST for a memory
// of the branch checked out.
import { scoreMemory } from "../retrieval/rank.ts";
import { type CompressionForms, formsOf } from "./compress.ts";
import type { CandidateRef, MemoryDetails } from "./gather.ts";
import { type Excluded, judgeMemory, LINEAGE_BOOST, type LineageVerdict } from "./lineage.ts";
import type { CriticalTag } from "./render.ts";
import type { Activity, Signals } from "./schemas.ts";
import type { StaleCandidate, TierCandidate } from "./pack-tiers.ts";
import type { Tier } from "./tiers.ts";

export type { Excluded };

const DECISION_CATEGORIES = new Set(["decisions", "architecture", "conventions"]);
const MODULE_DECISION_CATEGORIES = new Set(["decisions", "architecture"]);
const ERROR_COVERAGE = 0.5;
const TAG_ORDER: readonly CriticalTag[] = ["unresolved", "decision", "fix", "file", "error"];

export interface ScoredCandidate {
  id: string;
  tier: Exclude<Tier, "index">;
  tag?: CriticalTag;
  score: number;
  relevance: number;
  kinds: string[];
  lineage: LineageVerdict;
  forms: CompressionForms;
  memory: MemoryDetails;
  pairId?: string;
}

export interface Selection {
  critical: TierCandidate[];
  relevant: TierCandidate[];
  background: TierCandidate[];
  stale: StaleCandidate[];
  excluded: Excluded[];
  /** Every candidate kept, by id, for the response. */
  scored: Map<string, ScoredCandidate>;
  /** Found only as the other side of a contradiction that is not shown: not a candidate, but counted in `omitted`. */
  unshown: string[];
}

export interface SelectInput {
  refs: readonly CandidateRef[];
  details: ReadonlyMap<string, MemoryDetails>;
  signals: Signals;
  activity?: Activity;
}

function criticalTag(
  m: MemoryDetails,
  refs: readonly CandidateRef[],
  signals: Signals,
  activity?: Activity,
): CriticalTag | undefined {
  if (refs.some((r) => r.kind === "contradiction")) return "unresolved";
  const current = signals.current_file;
  // By what the memory cites, not by which lookup found it: the file lookup names one file per
  // memory (the first in path order, an open file's before the current one's) and keeps the 30
  // most important citations of all the files, so an open file's could leave the current one's
  // to the directory lookup or the search.
  const citesCurrent = current !== undefined &&
    (m.cited_files.includes(current) || refs.some((r) => r.kind === "file" && r.detail === current));
  if (citesCurrent && DECISION_CATEGORIES.has(m.category ?? "")) return "decision";
  if (refs.some((r) => r.kind === "module") && MODULE_DECISION_CATEGORIES.has(m.category ?? "")) return "decision";
  const errorFix = m.category === "errors_and_fixes" || m.source === "error_resolution";
  if (refs.some((r) => r.kind === "error" && ((r.coverage ?? 0) >= ERROR_COVERAGE || errorFix))) return "fix";
  if (citesCurrent) return "file";
  if (activity === "debugging" && refs.some((r) => r.kind === "recent_error")) return "error";
  return undefined;
}

const byScore = (a: ScoredCandidate, b: ScoredCandidate) =>
  b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

export function selectTiers(input: SelectInput): Selection {
  const byId = new Map<string, CandidateRef[]>();
  for (const r of input.refs) byId.set(r.id, [...(byId.get(r.id) ?? []), r]);
  const scored = new Map<string, ScoredCandidate>();
  const excluded: Excluded[] = [];
  const stale: StaleCandidate[] = [];
  const unshown: string[] = [];

  const judged = new Map<string, ReturnType<typeof judgeMemory>>();
  for (const [id, m] of input.details) judged.set(id, judgeMemory(id, m.metadata, m.cited_files, input.signals));
  // A contradiction counts only while its other side is shown too: a fact is not [unresolved] on
  // this branch because another branch's unmerged note (or a stale one) says otherwise.
  const shown = (id: string | undefined) => id !== undefined && judged.has(id) && !judged.get(id)!.excluded;

  for (const [id, found] of [...byId.entries()].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const m = input.details.get(id);
    if (!m) continue;
    const { lineage, excluded: out } = judged.get(id)!;
    const forms = formsOf(m.content, m.metadata);
    if (out) {
      excluded.push(out);
      if (out.stale) stale.push({ id, forms, stale: out.stale });
      continue;
    }
    const refs = found.filter((r) => r.kind !== "contradiction" || shown(r.detail));
    if (refs.length === 0) {
      unshown.push(id);
      continue;
    }
    const tag = criticalTag(m, refs, input.signals, input.activity);
    const onlyBackground = refs.every((r) => r.kind === "background");
    const relevance = Math.max(...refs.map((r) => r.weight));
    const score = scoreMemory({
      id,
      relevance,
      strength: m.strength,
      priority: m.priority,
      pinned: m.pinned,
      // Insights count at a lower weight here too, as in retrieval (retrieval/rank.ts).
      memory_type: m.memory_type,
      max_relation_strength: m.max_relation_strength,
      usage: { citation_count: m.citation_count, ignore_count: m.ignore_count },
      factor: lineage === "current_branch" ? LINEAGE_BOOST : 1,
    });
    scored.set(id, {
      id,
      tier: tag ? "critical" : onlyBackground ? "background" : "relevant",
      tag,
      score,
      relevance,
      kinds: [...new Set(refs.map((r) => r.kind))].sort(),
      lineage,
      forms,
      memory: m,
      // The partner with the smallest id: two memories that contradict each other pick each other.
      pairId: tag === "unresolved"
        ? refs.filter((r) => r.kind === "contradiction").map((r) => r.detail!).sort()[0]
        : undefined,
    });
  }

  const toCandidate = (s: ScoredCandidate): TierCandidate => {
    const pair = s.pairId !== undefined ? scored.get(s.pairId) : undefined;
    return {
      id: s.id,
      content: s.memory.content,
      forms: s.forms,
      ...(s.tag ? { tag: s.tag } : {}),
      ...(pair ? { pair: { id: pair.id, content: pair.memory.content, forms: pair.forms } } : {}),
    };
  };
  const all = [...scored.values()];
  // A contradiction is one bullet with both sides: listed once, under the side that sorts first.
  // A memory in several contradictions pairs with one of them; each other side keeps its own
  // bullet, with it (before, such a side paired with a memory that had paired elsewhere was left
  // out of the context altogether).
  const critical = all
    .filter((s) =>
      s.tier === "critical" &&
      !(s.tag === "unresolved" && s.pairId !== undefined && s.pairId < s.id && scored.get(s.pairId)?.pairId === s.id)
    )
    .sort((a, b) => TAG_ORDER.indexOf(a.tag!) - TAG_ORDER.indexOf(b.tag!) || byScore(a, b));
  return {
    critical: critical.map(toCandidate),
    relevant: all.filter((s) => s.tier === "relevant").sort(byScore).map(toCandidate),
    background: all.filter((s) => s.tier === "background").sort(byScore).map(toCandidate),
    stale,
    excluded,
    scored,
    unshown,
  };
}
