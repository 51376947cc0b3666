// Lifecycle settings the memory API shares with the nightly jobs: public.memory_settings (name, value),
// read through public.memory_setting(name) (raises if missing), so the API and the cron jobs can
// never disagree on a threshold. Read in the tenant's transaction (the table is readable by
// authenticated).
import type { Tx } from "../db.ts";

export interface DecaySettings {
  decayBase: number;
  pruneThreshold: number;
}

export async function purgeGraceDays(tx: Tx): Promise<number> {
  const [row] = await tx<{ days: number }[]>`select public.memory_setting('purge_grace_days')::float8 as days`;
  return row!.days;
}

export async function decaySettings(tx: Tx): Promise<DecaySettings> {
  const [row] = await tx<{ base: number; prune: number }[]>`
    select public.memory_setting('decay_base')::float8 as base, public.memory_setting('prune_threshold')::float8 as prune`;
  return { decayBase: row!.base, pruneThreshold: row!.prune };
}
