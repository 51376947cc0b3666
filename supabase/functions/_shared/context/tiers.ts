// The four tiers of an assembled context and how a budget is split between them
// (docs/context.md#tiers). Shares are of the budget left after the heading; the activity
// rebalances them (debugging widens critical to 3,000 of 8,000 and narrows background to 1,500),
// and whatever a tier leaves unused flows to the next one in this order.
import type { Activity } from "./schemas.ts";
import type { Level } from "./compress.ts";

export const TIERS = ["critical", "relevant", "background", "index"] as const;
export type Tier = typeof TIERS[number];

export type TierShares = Readonly<Record<Tier, number>>;

/** Default shares: 25 / 37.5 / 25 / 12.5 %. */
export const DEFAULT_SHARES: TierShares = { critical: 0.25, relevant: 0.375, background: 0.25, index: 0.125 };

/** Shares per activity; each row sums to 1. */
export const ACTIVITY_SHARES: Readonly<Record<Activity, TierShares>> = {
  feature: DEFAULT_SHARES,
  debugging: { critical: 0.375, relevant: 0.3125, background: 0.1875, index: 0.125 },
  testing: { critical: 0.3125, relevant: 0.3125, background: 0.25, index: 0.125 },
  review: { critical: 0.25, relevant: 0.3125, background: 0.3125, index: 0.125 },
  refactor: { critical: 0.25, relevant: 0.375, background: 0.25, index: 0.125 },
  docs: { critical: 0.1875, relevant: 0.375, background: 0.3125, index: 0.125 },
  ops: { critical: 0.25, relevant: 0.3125, background: 0.3125, index: 0.125 },
};

/** Categories the background tier draws from: conventions and workflows always, plus the activity's own. */
export const BACKGROUND_CATEGORIES: readonly string[] = ["conventions", "workflows", "procedural"];
export const ACTIVITY_CATEGORIES: Readonly<Record<Activity, readonly string[]>> = {
  feature: ["architecture", "decisions", "dependencies"],
  debugging: ["errors_and_fixes", "testing", "commands"],
  testing: ["testing", "commands", "errors_and_fixes"],
  review: ["decisions", "testing", "preferences"],
  refactor: ["architecture", "decisions"],
  docs: ["architecture", "preferences"],
  ops: ["deployment", "commands", "build"],
};

/**
 * Compression levels a tier uses: `preferred` for every memory first (falling back to the more
 * compressed levels when it does not fit), then, with budget left, memories are upgraded in rank
 * order up to `richest`.
 */
export const TIER_LEVELS: Readonly<Record<Tier, { preferred: Level; richest: Level }>> = {
  critical: { preferred: "full", richest: "full" },
  relevant: { preferred: "summary", richest: "full" },
  background: { preferred: "compressed", richest: "summary" },
  index: { preferred: "index", richest: "index" },
};

export function sharesFor(activity?: Activity): TierShares {
  return activity ? ACTIVITY_SHARES[activity] : DEFAULT_SHARES;
}

/** Whole-token budgets per tier for `available` tokens: floors, the remainder to the first tiers. */
export function tierBudgets(available: number, shares: TierShares): Record<Tier, number> {
  const out = Object.fromEntries(TIERS.map((t) => [t, Math.floor(available * shares[t])])) as Record<Tier, number>;
  let rest = available - TIERS.reduce((s, t) => s + out[t], 0);
  for (const t of TIERS) {
    if (rest <= 0) break;
    out[t]++;
    rest--;
  }
  return out;
}
