// The exact tokens of an assembled context and of each tier's section (docs/context.md#tiers),
// counting its text once: packing counted the whole text, then each section again (issue 19: at
// a 32,000-token budget, 268,000 characters for a 135,000-character context).
//
// The context is the heading and the sections joined by blank lines, and a line break followed by
// '#' is a certain piece boundary (token-windows.ts): when the text counts as the library counts it
// whole, its count is the sum of the counts of "heading\n\n", "section\n\n" for every section but
// the last, and the last section. A section's own count differs from its part's only by its last
// piece, which may take the blank line in ("…)\n\n"): a space after a printable character always
// starts a piece, so only the text from the section's last such space is counted again, with and
// without the blank line. Any other text (a piece too long, a window cut between characters) is
// counted as before: the whole text, then each section.
import { countsWhole, lastPieces, windowsCutAtPieces } from "../token-windows.ts";
import { countTokens } from "../tokens.ts";
import { lineTokens } from "./line-tokens.ts";
import { CONTEXT_HEADING } from "./render.ts";
import { type Tier, TIERS } from "./tiers.ts";

export interface ContextCount {
  total: number;
  sections: Record<Tier, number>;
}

const BLANK_LINE = "\n\n";

export function countContext(text: string, sections: Readonly<Record<Tier, string>>): ContextCount {
  return countedInParts(text, sections) ?? {
    total: countTokens(text),
    sections: Object.fromEntries(TIERS.map((t) => [t, lineTokens(sections[t])])) as Record<Tier, number>,
  };
}

function countedInParts(text: string, sections: Readonly<Record<Tier, string>>): ContextCount | undefined {
  const shown = TIERS.filter((t) => sections[t] !== "");
  const joined = CONTEXT_HEADING.length + shown.reduce((n, t) => n + BLANK_LINE.length + sections[t].length, 0);
  if (shown.length === 0 || joined !== text.length || !countsWhole(text)) return undefined;
  const counts: Record<Tier, number> = { critical: 0, relevant: 0, background: 0, index: 0 };
  let total = lineTokens(CONTEXT_HEADING + BLANK_LINE);
  for (const [k, tier] of shown.entries()) {
    const section = sections[tier];
    if (!windowsCutAtPieces(section)) return undefined;
    if (k === shown.length - 1) {
      counts[tier] = lineTokens(section);
      total += counts[tier];
      break;
    }
    const part = section + BLANK_LINE;
    const tail = lastPieces(section, BLANK_LINE.length);
    if (tail === undefined || !windowsCutAtPieces(part)) return undefined;
    const n = lineTokens(part);
    counts[tier] = n - countTokens(tail + BLANK_LINE) + countTokens(tail);
    total += n;
  }
  return { total, sections: counts };
}
