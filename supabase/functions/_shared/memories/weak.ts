// "What will decay soon" (seed 003 weak_facts), with the database's own formula
// (public.memory_decayed_strength): strength = base_strength × decay_base^floor(days since last
// access), decay_base and prune_threshold from public.memory_settings.
import type { DecaySettings } from "./settings.ts";

const DAY_MS = 86_400_000;

export function daysSince(then: Date, now: Date): number {
  return Math.max(0, (now.getTime() - then.getTime()) / DAY_MS);
}

export function predictStrength(baseStrength: number, lastAccessedAt: Date, now: Date, s: DecaySettings): number {
  return baseStrength * s.decayBase ** Math.floor(daysSince(lastAccessedAt, now));
}

/** Whole days from now until the nightly decay takes it below the prune threshold (0 if it already has). */
export function daysUntilPrune(baseStrength: number, lastAccessedAt: Date, now: Date, s: DecaySettings): number {
  if (baseStrength < s.pruneThreshold) return 0;
  if (s.decayBase >= 1) return Number.POSITIVE_INFINITY;
  // First whole day d with base × decay_base^d < prune_threshold.
  const d = Math.floor(Math.log(s.pruneThreshold / baseStrength) / Math.log(s.decayBase)) + 1;
  return Math.max(0, d - Math.floor(daysSince(lastAccessedAt, now)));
}
