// Holding a tenant's heavy turn (_shared/heavy-turns.ts) from a test, as a request's pass over an
// 8 MiB body does, until the test releases it.
import { heavyTurns } from "../../supabase/functions/_shared/heavy-turns.ts";

/** A promise and the function that settles it. */
export function gate(): { opened: Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

/** Holds the tenant's turn until `release` (which resolves once the turn is given back). */
export async function heldTurn(tenant: string) {
  const taken = gate(), released = gate();
  const done = heavyTurns.run(tenant, async () => {
    taken.open();
    await released.opened;
  });
  await taken.opened;
  return { release: () => (released.open(), done) };
}
