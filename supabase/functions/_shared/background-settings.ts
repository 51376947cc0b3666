// The settings consolidation reads (public.memory_settings, through public.memory_setting, which
// raises if one is missing): read at every run, so a change takes effect at the next one. The
// insight, proposal and reindex jobs read theirs in their own SQL.
// docs/consolidation.md#settings.
import type { Tx } from "./db.ts";

export interface BackgroundSettings {
  pairsPerNight: number;
  tokensPerNight: number;
  pairsPerPrompt: number;
  poolPerNight: number;
  recentHours: number;
  recencyDays: number;
  fingerprintDays: number;
  forgetSupersededDays: number;
  episodeSummaryDays: number;
  episodeCompressDays: number;
  episodeSessionsPerNight: number;
  purgeGraceDays: number;
}

const NAMES: Record<keyof BackgroundSettings, string> = {
  pairsPerNight: "consolidation_pairs_per_night",
  tokensPerNight: "consolidation_tokens_per_night",
  pairsPerPrompt: "consolidation_pairs_per_prompt",
  poolPerNight: "consolidation_pool_per_night",
  recentHours: "consolidation_recent_hours",
  recencyDays: "consolidation_recency_days",
  fingerprintDays: "consolidation_fingerprint_days",
  forgetSupersededDays: "consolidation_forget_superseded_days",
  episodeSummaryDays: "episode_summary_days",
  episodeCompressDays: "episode_compress_days",
  episodeSessionsPerNight: "episode_sessions_per_night",
  purgeGraceDays: "purge_grace_days",
};

export async function loadBackgroundSettings(tx: Tx): Promise<BackgroundSettings> {
  const keys = Object.keys(NAMES) as (keyof BackgroundSettings)[];
  const rows = await tx<{ k: string; v: number }[]>`
    select k, public.memory_setting(n)::float8 as v
      from unnest(${keys}::text[], ${keys.map((k) => NAMES[k])}::text[]) as s(k, n)`;
  return Object.fromEntries(rows.map((r) => [r.k, Number(r.v)])) as unknown as BackgroundSettings;
}
