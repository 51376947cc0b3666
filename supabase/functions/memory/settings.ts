// How long a forgotten memory waits before the purge job removes it. Operators tune it in
// public.memory_settings (added by the maintenance migrations); without that table, or without a
// readable value in it, the default applies. Read inside the tenant's transaction, so RLS applies,
// and inside a savepoint, so an unexpected layout can never abort the caller's write.
import type { Tx } from "../_shared/db.ts";

export const DEFAULT_PURGE_GRACE_DAYS = 30;
const SETTING = "purge_grace_days";

function asDays(v: unknown): number | undefined {
  const n = typeof v === "string" && v.trim() !== "" ? Number(v) : v;
  return typeof n === "number" && Number.isInteger(n) && n >= 0 && n <= 3650 ? n : undefined;
}

/**
 * Accepts the two usual layouts: one row with a `purge_grace_days` column, or key/value rows
 * (`key`/`name`/`setting` = 'purge_grace_days', `value`). A row for the tenant wins over a global one.
 */
export function graceDaysFromRows(rows: readonly Record<string, unknown>[], tenantId: string): number | undefined {
  const ranked = [...rows].sort((a, b) => Number(b.owner_id === tenantId) - Number(a.owner_id === tenantId));
  for (const row of ranked) {
    if (row.owner_id !== undefined && row.owner_id !== null && row.owner_id !== tenantId) continue;
    const direct = asDays(row[SETTING]);
    if (direct !== undefined) return direct;
    const key = row.key ?? row.name ?? row.setting;
    if (key === SETTING) {
      const v = asDays(row.value ?? row.int_value ?? row.value_int);
      if (v !== undefined) return v;
    }
  }
  return undefined;
}

export async function purgeGraceDays(tx: Tx, tenantId: string): Promise<number> {
  const [probe] = await tx<{ readable: boolean }[]>`
    select coalesce(has_table_privilege(to_regclass('public.memory_settings'), 'select'), false) as readable`;
  if (!probe?.readable) return DEFAULT_PURGE_GRACE_DAYS;
  try {
    const rows = await tx.savepoint((sp) =>
      sp<{ row: Record<string, unknown> }[]>`select to_jsonb(s) as row from public.memory_settings s limit 200`
    );
    return graceDaysFromRows(rows.map((r) => r.row), tenantId) ?? DEFAULT_PURGE_GRACE_DAYS;
  } catch {
    return DEFAULT_PURGE_GRACE_DAYS;
  }
}
