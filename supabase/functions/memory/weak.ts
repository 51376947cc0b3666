// "What will decay soon" (seed 003 weak_facts). The nightly decay sets
// strength = base_strength × 0.95^(days since last access) (ARCHITECTURE.md: no compounding), and
// retrieval ignores memories at or below 0.05, so both the predicted strength now and the days left
// until that threshold follow from base_strength and last_accessed_at alone.

export const DECAY_PER_DAY = 0.95;
export const PRUNE_THRESHOLD = 0.05;
const DAY_MS = 86_400_000;

export function daysSince(then: Date, now: Date): number {
  return Math.max(0, (now.getTime() - then.getTime()) / DAY_MS);
}

export function predictStrength(baseStrength: number, lastAccessedAt: Date, now: Date): number {
  return baseStrength * DECAY_PER_DAY ** daysSince(lastAccessedAt, now);
}

/** Days from now until the predicted strength reaches the prune threshold (0 if it already has). */
export function daysUntilPrune(baseStrength: number, lastAccessedAt: Date, now: Date): number {
  if (baseStrength <= PRUNE_THRESHOLD) return 0;
  const total = Math.log(PRUNE_THRESHOLD / baseStrength) / Math.log(DECAY_PER_DAY);
  return Math.max(0, total - daysSince(lastAccessedAt, now));
}
