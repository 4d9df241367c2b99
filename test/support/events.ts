/** Events for tests of the event plumbing (the bus, the log's subscribers). */
import type { ReceivedEvent } from "../../src/events/schemas.ts"

/** Event number `n`: its id, name (`{prefix}.{n}`) and resource follow from `n`. */
export const numberedEvent = (prefix: string, n: number): ReceivedEvent => ({
  id: `00000000-0000-4000-b000-${String(n).padStart(12, "0")}`,
  occurred: new Date("2026-11-24T10:00:00Z"),
  received: new Date("2026-11-24T10:00:01Z"),
  event: `${prefix}.${n}`,
  resource: { "prefect.resource.id": `thing.${n}` },
  related: [],
  payload: {},
  follows: null
})
