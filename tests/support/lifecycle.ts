// For the tests of the nightly jobs' step forms: keeps pg_cron's own schedule of a job from
// taking turns with the test's calls (the test database is pg_cron's, and decay, TTL and purge run
// there every minute of their windows, 03:00-05:59 UTC), gives the job settings back after, and
// removes the test tenants' rows. A database without pg_cron (PGlite) has nothing to pause.
import type postgres from "postgres";

type Sql = ReturnType<typeof postgres>;

/** Deactivates the named pg_cron jobs of this database, if pg_cron is installed; resume() turns
 * them back on. */
export async function pauseCronJobs(sql: Sql, jobNames: string[]): Promise<{ resume(): Promise<void> }> {
  const [state] = await sql<
    { cron: boolean }[]
  >`select exists (select from pg_extension where extname = 'pg_cron') as cron`;
  const setActive = async (active: boolean) => {
    if (!state?.cron) return;
    await sql`select cron.alter_job(jobid, active => ${active}) from cron.job
               where jobname = any(${jobNames}) and database = current_database()`;
  };
  await setActive(false);
  return { resume: () => setActive(true) };
}

/** Sets public.memory_settings values for a test; restore() puts the previous values back. */
export async function overrideSettings(
  sql: Sql,
  values: Record<string, number>,
): Promise<{ restore(): Promise<void> }> {
  const names = Object.keys(values);
  const before = await sql<{ name: string; value: string }[]>`
    select name, value::text from public.memory_settings where name = any(${names})`;
  for (const [name, value] of Object.entries(values)) {
    await sql`update public.memory_settings set value = ${value} where name = ${name}`;
  }
  return {
    async restore() {
      for (const { name, value } of before) {
        await sql`update public.memory_settings set value = ${value}::numeric where name = ${name}`;
      }
    },
  };
}

/** Removes what the tenants left: memories, history, change log and thread revisions. */
export async function removeTenantData(sql: Sql, owners: string[]): Promise<void> {
  await sql`delete from public.devai_memories where owner_id = any(${owners}::uuid[])`;
  await sql`delete from public.memory_history where owner_id = any(${owners}::uuid[])`;
  await sql`delete from public.memory_change_log where owner_id = any(${owners}::uuid[])`;
  await sql`delete from public.memory_thread_revisions where owner_id = any(${owners}::uuid[])`;
}
