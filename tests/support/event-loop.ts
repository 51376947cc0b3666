// Whether long work of a request gives the event loop back (event-loop-slice.ts), without timing it:
// another request's work is queued as the work starts, and the order in which the two end says.
import { EventLoopSlice } from "../../supabase/functions/_shared/event-loop-slice.ts";

/** The order in which `work` (named `what`) and another request's work, queued once this code gives the event loop back, end. */
export async function whoEndsFirst(work: () => Promise<unknown>, what: string): Promise<string[]> {
  const order: string[] = [];
  const other = new Promise((resolve) => setTimeout(resolve, 0)).then(() => order.push("other request"));
  await work().then(() => order.push(what));
  await other;
  return order;
}

/** A slice always used up, counting the times the work gave the event loop back: where it yields, not how fast it is. */
export class CountingSlice extends EventLoopSlice {
  yields = 0;
  override due() {
    return true;
  }
  override async yield() {
    this.yields++;
    await super.yield();
  }
}
