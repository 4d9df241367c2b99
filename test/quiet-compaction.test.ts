/**
 * When bin/baton.mjs compacts the heap after a burst: only once the process has been quiet for two
 * readings in a row, and only when the heap grew enough since the last compaction to be worth it.
 */
import { describe, expect, it } from "@effect/vitest"
import {
  afterReading,
  GROWTH_WORTH_COMPACTING,
  QUIET_CHECK_MS,
  QUIET_CPU_SHARE
} from "../bin/quiet-compaction.mjs"

const MiB = 1024 * 1024
const busy = QUIET_CHECK_MS * 1000 * 0.5
const quiet = QUIET_CHECK_MS * 1000 * QUIET_CPU_SHARE * 0.5

/** Runs readings through the decision from a heap of 50 MiB just compacted; the readings it compacted at. */
const compactions = (readings: ReadonlyArray<{ heapMiB: number; cpuMicros: number }>) => {
  let state = { quietReadings: 0, heapAfterCompaction: 50 * MiB }
  const at: Array<number> = []
  readings.forEach((reading, index) => {
    const next = afterReading(state, { heapBytes: reading.heapMiB * MiB, cpuMicros: reading.cpuMicros, intervalMs: QUIET_CHECK_MS })
    state = next.state
    if (next.compact) {
      at.push(index)
      // What a compaction could not give back is not garbage: the baseline for the next burst.
      state = { quietReadings: 0, heapAfterCompaction: reading.heapMiB * MiB }
    }
  })
  return at
}

describe("compaction after a burst", () => {
  it("compacts once, at the second quiet reading after a burst that grew the heap", () => {
    const burst = Array.from({ length: 5 }, (_, i) => ({ heapMiB: 60 + 20 * i, cpuMicros: busy }))
    const after = Array.from({ length: 6 }, () => ({ heapMiB: 140, cpuMicros: quiet }))
    expect(compactions([...burst, ...after])).toEqual([6])
  })

  it("does not compact while the process stays busy", () => {
    expect(compactions(Array.from({ length: 20 }, (_, i) => ({ heapMiB: 60 + 10 * i, cpuMicros: busy })))).toEqual([])
  })

  it("does not compact a quiet process whose heap grew less than the threshold", () => {
    const small = 50 + (GROWTH_WORTH_COMPACTING / MiB) - 1
    expect(compactions(Array.from({ length: 10 }, () => ({ heapMiB: small, cpuMicros: quiet })))).toEqual([])
  })

  it("starts counting quiet readings again when work comes back", () => {
    const readings = [
      { heapMiB: 120, cpuMicros: busy },
      { heapMiB: 120, cpuMicros: quiet },
      { heapMiB: 120, cpuMicros: busy },
      { heapMiB: 120, cpuMicros: quiet },
      { heapMiB: 120, cpuMicros: quiet }
    ]
    expect(compactions(readings)).toEqual([4])
  })
})
