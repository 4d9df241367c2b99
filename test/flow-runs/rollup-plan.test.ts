import { describe, expect, it } from "@effect/vitest"
import { rollupPlan } from "../../src/flow-runs/history.ts"

const MINUTE = 60_000
const SLOT = 15 * MINUTE
/** A quarter hour's start. */
const T = Date.UTC(2026, 10, 29, 15, 0, 0)

describe("the rollup's plan for a history", () => {
  it("takes the slot holding the time of the request from its rollup row less the runs after that time, wherever the time falls in it", () => {
    for (const into of [2 * MINUTE + 17_123, 7 * MINUTE, 12 * MINUTE]) {
      const now = T + into
      const start = now - 24 * 60 * MINUTE
      const plan = rollupPlan({
        start,
        until: now,
        boundaries: Array.from({ length: 25 }, (_, i) => start + i * 60 * MINUTE),
        filter: {},
        now,
        hours: true
      })
      // The slot is derived: its runs before the time of the request are not read one by one.
      expect(plan.derivedSlots).toContain(new Date(T).toISOString())
      const read = plan.pieceFrom.map((from, i) => [from, plan.pieceTo[i]!] as const)
      const inSlot = read.filter(([from]) => new Date(from).getTime() >= T && new Date(from).getTime() < T + SLOT)
      expect(inSlot.map(([from, to]) => [new Date(from).getTime(), new Date(to).getTime()])).toEqual([[now, T + SLOT]])
    }
  })

  it("reads a past slot's smaller side, as the time inside it splits it", () => {
    const now = T + 3 * SLOT + 5 * MINUTE
    const slot = T - 24 * 60 * MINUTE
    // A window starting 2 minutes into a slot a day ago: the 2 minutes before it are read, the 13 derived.
    const start = slot + 2 * MINUTE
    const plan = rollupPlan({ start, until: now, boundaries: [start, now], filter: {}, now, hours: true })
    expect(plan.derivedSlots).toContain(new Date(slot).toISOString())
    const read = plan.pieceFrom.map((from, i) => [new Date(from).getTime(), new Date(plan.pieceTo[i]!).getTime()] as const)
    expect(read.filter(([from]) => from >= slot && from < slot + SLOT)).toEqual([[slot, start]])
  })
})
